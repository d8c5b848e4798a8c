"""The harness's own client over TLS and SASL against a reference broker: produce and fetch over every
secured listener with every mechanism and over mutual TLS, the broker's refusals surfacing with its code
and words, re-authentication before a 2 s session ends (KIP-368, ``SaslClientAuthenticator``), and the
client settings checked as Kafka's ``SslConfigs``/``SaslConfigs`` are."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.codecs.errors import Errors
from kconform.harness.client.config import AdminConfig, ClientConfigError
from kconform.harness.client.connection import BrokerConnection
from kconform.harness.client.consumer import Consumer
from kconform.harness.client.errors import ConnectionLost
from kconform.harness.client.network import parse_bootstrap
from kconform.harness.client.producer import Producer
from kconform.harness.client.properties import parse_properties
from kconform.harness.client.sasl_login import AuthenticationFailed, reauth_delay_s
from kconform.harness.client.security import security_from_config

from ..support.secured_reference import start_secured_broker

pytestmark = pytest.mark.slow

WAYS = [
    ("SSL", None),
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
    ("SASL_PLAINTEXT", "OAUTHBEARER"),
    ("SASL_SSL", "PLAIN"),
    ("SASL_SSL", "SCRAM-SHA-256"),
    ("SASL_SSL", "SCRAM-SHA-512"),
    ("SASL_SSL", "OAUTHBEARER"),
]


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    broker = start_secured_broker(tmp_path_factory.mktemp("secured-client"))
    yield broker
    broker.node.stop()


async def _connect(props: dict) -> BrokerConnection:
    host, port = parse_bootstrap(props["bootstrap.servers"])[0]
    security = security_from_config(AdminConfig(props))
    return await BrokerConnection.connect(host, port, security=security, request_timeout=10)


async def _produce_and_fetch(props: dict, topic: str, count: int) -> list[bytes]:
    async with Producer({**props, "linger.ms": 0}) as producer:
        for i in range(count):
            await producer.send_and_wait(topic, f"v-{i}".encode())
    consumer_props = {**props, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"}
    read: list[bytes] = []
    async with Consumer(consumer_props) as consumer:
        consumer.subscribe([topic])
        for _ in range(60):
            read += [record.value for record in await consumer.poll(500)]
            if len(read) >= count:
                break
    return read


@pytest.mark.parametrize(("protocol", "mechanism"), WAYS, ids=[f"{p}-{m or 'mTLS'}" for p, m in WAYS])
def test_produce_and_fetch_over_every_secured_listener(secured, protocol, mechanism):
    topic = f"sec-{protocol}-{mechanism or 'tls'}-{uuid.uuid4().hex[:6]}".lower()
    read = asyncio.run(_produce_and_fetch(secured.properties(protocol, mechanism), topic, 5))
    assert sorted(read) == [f"v-{i}".encode() for i in range(5)]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_wrong_password_carries_the_brokers_refusal(secured, mechanism):
    props = secured.properties("SASL_SSL", mechanism, password="not-the-password")
    with pytest.raises(AuthenticationFailed) as refused:
        asyncio.run(_connect(props))
    assert refused.value.code == Errors.SASL_AUTHENTICATION_FAILED
    assert "Authentication failed" in str(refused.value), "the broker's own error_message"
    assert "SASL_AUTHENTICATION_FAILED" in str(refused.value)


def test_a_mechanism_the_listener_does_not_offer_names_the_offered_ones(secured):
    props = secured.properties("SASL_PLAINTEXT", "PLAIN")
    security = security_from_config(AdminConfig(props))

    class Gssapi:  # a login whose mechanism the broker does not offer: the handshake refuses it
        mechanism = "GSSAPI"

    host, port = parse_bootstrap(props["bootstrap.servers"])[0]
    refused = security.__class__(security.protocol, None, Gssapi())
    with pytest.raises(AuthenticationFailed) as error:
        asyncio.run(BrokerConnection.connect(host, port, security=refused, request_timeout=10))
    assert error.value.code == Errors.UNSUPPORTED_SASL_MECHANISM
    assert set(error.value.mechanisms) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}
    assert "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER" in str(error.value)


def test_a_connection_kept_past_its_session_lifetime_reauthenticates(secured):
    """SASL_PLAINTEXT/PLAIN sessions last 2 s on this broker; a connection kept 5 s, busy then idle, keeps
    working because it logs in again at 85-95% of the lifetime (a broker closes an expired session at
    its next request, ``SaslServerAuthenticator``)."""

    async def run() -> tuple[int, int]:
        conn = await _connect(secured.properties("SASL_PLAINTEXT", "PLAIN"))
        try:
            answered = 0
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 5.0
            while loop.time() < deadline:
                response = await conn.send(3, _metadata_request())
                answered += response.brokers[0].node_id == 1
                await asyncio.sleep(0.8 if answered % 2 else 0.05)
            await asyncio.sleep(1.0)  # idle past the next expiry, then ask again
            response = await conn.send(3, _metadata_request())
            answered += response.brokers[0].node_id == 1
            assert not conn.closed
            return answered, conn.reauthentications
        finally:
            await conn.wait_closed()

    answered, reauthentications = asyncio.run(run())
    assert reauthentications >= 2, "two lifetimes of 2 s passed"
    assert answered >= 5


def _metadata_request():
    from kconform.codecs.messages import MetadataRequest

    return MetadataRequest(topics=[], allow_auto_topic_creation=False)


def test_a_plaintext_client_on_the_tls_listener_fails_cleanly(secured):
    host, port = parse_bootstrap(secured.bootstrap("SSL"))[0]
    with pytest.raises(ConnectionLost):
        asyncio.run(BrokerConnection.connect(host, port, request_timeout=3, connect_timeout=3))


def test_an_untrusted_broker_certificate_is_refused(secured, tmp_path):
    from ..support.certificates import TestAuthority

    props = secured.properties("SASL_SSL", "PLAIN")
    props["ssl.truststore.location"] = str(TestAuthority(tmp_path / "other").ca)
    with pytest.raises(ConnectionLost, match="CERTIFICATE_VERIFY_FAILED"):
        asyncio.run(_connect(props))


def test_pkcs12_and_inline_pem_stores_load(secured):
    props = secured.properties("SSL")
    directory = secured.authority.directory
    props |= {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(directory / "alice.p12"),
        "ssl.keystore.password": "changeit",
        "ssl.truststore.location": None,
        "ssl.truststore.certificates": secured.authority.ca.read_text(),
    }

    async def run():
        conn = await _connect(props)
        await conn.wait_closed()
        return conn.versions

    assert 0 in asyncio.run(run())


# ---- settings, without a broker ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("props", "words"),
    [
        ({"security.protocol": "SASL_SSH"}, "security.protocol"),
        ({"sasl.mechanizm": "PLAIN"}, "did you mean sasl.mechanism"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "needs sasl.jaas.config"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": "x required;"}, "GSSAPI"),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": "Plain x;",
            },
            "control flag",
        ),
        ({"security.protocol": "SSL", "ssl.truststore.location": "/nowhere/ca.pem"}, "JKS is not supported"),
        (
            {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": "/nowhere"},
            "cannot read /nowhere",
        ),
        ({"security.protocol": "SSL", "ssl.keystore.key": "x"}, "go together"),
    ],
)
def test_bad_security_settings_are_refused_with_the_setting_named(props, words):
    with pytest.raises(ClientConfigError, match=words):
        security_from_config(AdminConfig(props))


def test_a_plaintext_config_has_no_tls_and_no_sasl():
    security = security_from_config(AdminConfig({}))
    assert (security.protocol, security.ssl_context, security.sasl) == ("PLAINTEXT", None, None)


def test_host_name_checking_follows_endpoint_identification():
    on = security_from_config(AdminConfig({"security.protocol": "SSL"}))
    off = security_from_config(
        AdminConfig({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""})
    )
    assert on.ssl_context.check_hostname and not off.ssl_context.check_hostname


@given(st.integers(1, 10**9), st.floats(0, 1, exclude_max=True))
def test_reauthentication_falls_between_85_and_95_percent_of_the_lifetime(lifetime_ms, draw):
    delay = reauth_delay_s(lifetime_ms, lambda: draw)
    assert 0.85 * lifetime_ms / 1000 <= delay <= 0.95 * lifetime_ms / 1000


def test_no_lifetime_no_reauthentication():
    assert reauth_delay_s(0) is None


def test_properties_files_read_as_java_reads_them():
    text = (
        "# comment\n! also\nsecurity.protocol = SASL_SSL\nsasl.mechanism:PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        '    username="a" password="b";\nkey\\=with\\:colon value\\u0041\n'
    )
    assert parse_properties(text) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" '
        'password="b";',
        "key=with:colon": "valueA",
    }
