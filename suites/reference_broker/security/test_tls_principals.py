"""A TLS listener's principals, seen by the handlers: the client certificate's subject DN (RFC 2253)
mapped by ``ssl.principal.mapping.rules``; ANONYMOUS without a certificate where client auth is only
requested; refused where it is required (``DefaultKafkaPrincipalBuilder``, ``SslPrincipalMapper``)."""

from __future__ import annotations

import asyncio
import socket
import ssl

import pytest

from kconform.codecs.framing import encode_request, size_prefixed
from kconform.codecs.messages import ApiVersionsRequest
from kconform.reference_broker.config import BrokerConfig, ConfigError
from kconform.reference_broker.security.listener_security import ListenerSecurity
from kconform.reference_broker.security.principals import SslPrincipalMapper
from kconform.reference_broker.security.tls import server_context
from kconform.reference_broker.server import BrokerServer

from ...support.certificates import TestAuthority


class _Recorder:
    """A dispatcher that remembers who each request came from and answers nothing."""

    def __init__(self) -> None:
        self.seen: list = []
        self.broker = self

    def connection_closed(self, connection_id: int) -> None:
        pass

    async def handle(self, frame, *, peer, connection_id, connection=None):
        self.seen.append(connection.principal)
        return None


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    authority = TestAuthority(tmp_path_factory.mktemp("pki"))
    server = authority.issue("broker", server=True, CN="localhost")
    alice = authority.issue("alice", C="NO", O="kconform", OU="clients", CN="alice")
    return authority, server, alice


def _config(pki, client_auth: str, **extra: str) -> BrokerConfig:
    authority, server, _alice = pki
    return BrokerConfig(
        {
            "node.id": "1",
            "process.roles": "broker,controller",
            "log.dirs": "/tmp/unused",
            "listeners": "SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(server.combined),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(authority.ca),
            "listener.name.ssl.ssl.client.auth": client_auth,
            **extra,
        }
    )


def _principal_seen(pki, config: BrokerConfig, *, with_certificate: bool):
    authority, _server, alice = pki
    recorder = _Recorder()
    rules = config.static_props.get("ssl.principal.mapping.rules")
    security = ListenerSecurity("SSL", "SSL", server_context(config, "SSL"), SslPrincipalMapper(rules))

    async def run():
        server = BrokerServer(recorder, max_request_bytes=1 << 20, idle_timeout_s=30)
        host, port = await server.start("127.0.0.1", 0, security)
        context = ssl.create_default_context(cafile=str(authority.ca))
        if with_certificate:
            context.load_cert_chain(str(alice.certificate), str(alice.key))

        def client():
            with socket.create_connection((host, port), timeout=10) as raw:
                with context.wrap_socket(raw, server_hostname="localhost") as tls:
                    tls.sendall(size_prefixed(encode_request(18, 3, 1, "t", ApiVersionsRequest(
                        client_software_name="t", client_software_version="1"))))  # fmt: skip
                    tls.settimeout(2)
                    try:
                        tls.recv(1)
                    except (TimeoutError, ssl.SSLError, OSError):
                        pass

        try:
            await asyncio.to_thread(client)
        finally:
            await server.stop()
        return recorder.seen

    return asyncio.run(run())


def test_a_client_certificate_names_the_principal_by_its_subject_dn(pki):
    seen = _principal_seen(pki, _config(pki, "required"), with_certificate=True)
    assert [str(p) for p in seen] == ["User:CN=alice,OU=clients,O=kconform,C=NO"]


def test_mapping_rules_shape_the_principal(pki):
    config = _config(
        pki, "required", **{"ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=clients.*$/$1/U,DEFAULT"}
    )
    seen = _principal_seen(pki, config, with_certificate=True)
    assert [str(p) for p in seen] == ["User:ALICE"]


def test_without_a_certificate_a_requested_client_auth_gives_anonymous(pki):
    seen = _principal_seen(pki, _config(pki, "requested"), with_certificate=False)
    assert [str(p) for p in seen] == ["User:ANONYMOUS"]


def test_without_a_certificate_a_required_client_auth_refuses_the_connection(pki):
    assert _principal_seen(pki, _config(pki, "required"), with_certificate=False) == []


def test_key_stores_that_cannot_be_read_are_refused_by_name(pki, tmp_path):
    with pytest.raises(ConfigError, match="JKS cannot be read"):
        server_context(_config(pki, "none", **{"ssl.keystore.type": "JKS"}), "SSL")
    with pytest.raises(ConfigError, match="cannot load the key store"):
        missing = str(tmp_path / "nowhere.pem")
        server_context(_config(pki, "none", **{"ssl.keystore.location": missing}), "SSL")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate")
    with pytest.raises(ConfigError, match="cannot load the key store"):
        server_context(_config(pki, "none", **{"ssl.keystore.location": str(garbage)}), "SSL")


def test_a_pkcs12_key_store_serves_too(pki):
    authority = pki[0]
    config = _config(pki, "none", **{"ssl.keystore.type": "PKCS12",
                                     "ssl.keystore.location": str(authority.directory / "broker.p12"),
                                     "ssl.keystore.password": "changeit"})  # fmt: skip
    assert [str(p) for p in _principal_seen(pki, config, with_certificate=False)] == ["User:ANONYMOUS"]
