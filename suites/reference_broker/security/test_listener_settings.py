"""Listeners, principal mapping and JAAS values read as Kafka reads them (``CoreUtils
.listenerListToEndPoints``, ``KafkaConfig.validateValues``, ``SslPrincipalMapper``, ``JaasConfig``)."""

from __future__ import annotations

import pytest

from kconform.reference_broker.config import BrokerConfig, ConfigError
from kconform.reference_broker.security.jaas import parse_jaas_config, server_login_module
from kconform.reference_broker.security.listeners import Listener, listener_setup
from kconform.reference_broker.security.principals import NoMatchingRule, SslPrincipalMapper


def _config(**props: str) -> BrokerConfig:
    base = {"node.id": "1", "process.roles": "broker,controller", "log.dirs": "/tmp/unused"}
    return BrokerConfig({**base, **{k.replace("_", "."): v for k, v in props.items()}})


def _setup(props: dict[str, str]):
    base = {"node.id": "1", "process.roles": "broker,controller", "log.dirs": "/tmp/unused"}
    return listener_setup(BrokerConfig({**base, **props}))


def test_kafkas_default_is_one_plaintext_listener_on_9092():
    setup = _setup({})
    assert setup.bound == (Listener("PLAINTEXT", "", 9092, "PLAINTEXT"),)
    assert setup.advertised == setup.bound and setup.inter_broker == "PLAINTEXT"


def test_named_listeners_take_their_protocols_from_the_map_and_controllers_are_not_advertised():
    setup = _setup(
        {
            "listeners": "INTERNAL://127.0.0.1:9092,external://:9093,CONTROLLER://:9094",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL,CONTROLLER:PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "INTERNAL",
        }
    )
    assert [(li.name, li.security_protocol) for li in setup.bound] == [
        ("INTERNAL", "PLAINTEXT"), ("EXTERNAL", "SASL_SSL"), ("CONTROLLER", "PLAINTEXT")]  # fmt: skip
    assert [li.name for li in setup.advertised] == ["INTERNAL", "EXTERNAL"]
    assert setup.inter_broker == "INTERNAL"
    assert setup.by_name("EXTERNAL").uses_tls and setup.by_name("EXTERNAL").uses_sasl


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, "Each listener must have a different name"),
        ({"listeners": "PLAINTEXT://:9092,SSL://:9092"}, "Each listener must have a different port"),
        ({"listeners": "FOO://:9092"}, "No security protocol defined for listener FOO"),
        ({"listeners": "PLAINTEXT:9092"}, "Unable to parse PLAINTEXT:9092 to a broker endpoint"),
        ({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "nonroutable meta-address 0.0.0.0"),
        (
            {"advertised.listeners": "SSL://host:9093"},
            "must be a listener name defined in advertised.listeners",
        ),
        (
            {"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"},
            "Only one of inter.broker.listener.name and security.inter.broker.protocol",
        ),
        ({"listener.security.protocol.map": "PLAINTEXT:TLS"}, "SecurityProtocol.TLS"),
    ],
)
def test_listener_mistakes_get_kafkas_messages(props, message):
    with pytest.raises(ConfigError, match=message):
        _setup(props)


def test_port_zero_may_repeat_and_binding_fills_in_the_advertised_address():
    setup = _setup({"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"})
    setup = setup.with_bound_port("SSL", "127.0.0.1", 40001)
    assert setup.by_name("SSL").port == 40001
    assert [li.port for li in setup.advertised] == [0, 40001]


def test_a_given_advertised_listener_keeps_its_host_and_port():
    setup = _setup(
        {"listeners": "PLAINTEXT://127.0.0.1:0", "advertised.listeners": "PLAINTEXT://proxy:19092"}
    )
    setup = setup.with_bound_port("PLAINTEXT", "127.0.0.1", 40001)
    assert setup.advertised[0] == Listener("PLAINTEXT", "proxy", 19092, "PLAINTEXT")


# ---- ssl.principal.mapping.rules (cases from Kafka's SslPrincipalMapperTest) -------------------------


@pytest.mark.parametrize(
    ("rules", "dn", "name"),
    [
        (
            "DEFAULT",
            "CN=Duke,OU=JavaSoft,O=Sun Microsystems,C=US",
            "CN=Duke,OU=JavaSoft,O=Sun Microsystems,C=US",
        ),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=Duke,OU=ServiceUsers,O=Org,C=US", "Duke"),
        (
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT",
            "CN=Duke,OU=Other,O=Org,C=US",
            "CN=Duke,OU=Other,O=Org,C=US",
        ),
        (
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
            "CN=Duke,OU=JavaSoft,O=Sun,L=x,ST=y,C=US",
            "duke@javasoft",
        ),  # fmt: skip
        (
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U",
            "CN=Duke,OU=JavaSoft,O=Sun,L=x,ST=y,C=US",
            "DUKE@JAVASOFT",
        ),  # fmt: skip
        ("RULE:^CN=([^,]+)(,.*|$)/$1/", "CN=Duke,OU=x", "Duke"),
    ],
)
def test_principal_mapping_rules(rules, dn, name):
    assert SslPrincipalMapper(rules).name(dn) == name


def test_no_rule_that_applies_is_an_error_and_a_bad_rule_is_refused():
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper("RULE:^CN=(.*),OU=Admins$/$1/").name("CN=Duke,OU=Users")
    with pytest.raises(ConfigError):
        SslPrincipalMapper("RULE:(/x/,DEFAULT")


# ---- sasl.jaas.config -----------------------------------------------------------------------------


def test_a_plain_login_module_with_users():
    (module,) = parse_jaas_config(
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="a;l=i\\"ce";'
    )
    assert module.class_name.endswith("PlainLoginModule") and module.flag == "REQUIRED"
    assert module.options == {"username": "admin", "password": "admin-secret",
                              "user_admin": "admin-secret", "user_alice": 'a;l=i"ce'}  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Login module not specified"),
        ("Module", "control flag not specified"),
        ("Module sometimes;", "Invalid login module control flag 'sometimes'"),
        ('Module required key="v"', "not terminated by semi-colon"),
        ("Module required key;", "Value not specified for key 'key'"),
    ],
)
def test_jaas_mistakes_get_kafkas_messages(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_jaas_config(text)


def test_a_broker_reads_only_the_mechanism_prefixed_jaas_config():
    jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    config = _config(**{"listeners": "SASL_PLAINTEXT://:9092", "sasl.jaas.config": jaas})
    with pytest.raises(ConfigError, match="listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config"):
        server_login_module(config, "SASL_PLAINTEXT", "SCRAM-SHA-256")
    config = BrokerConfig({"node.id": "1", "process.roles": "broker,controller", "log.dirs": "/tmp/unused",
                           "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": jaas})  # fmt: skip
    assert server_login_module(config, "SASL_PLAINTEXT", "SCRAM-SHA-256").class_name.endswith(
        "ScramLoginModule"
    )
