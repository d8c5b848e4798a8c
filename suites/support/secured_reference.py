"""A reference broker with PLAINTEXT, SSL (mutual TLS), SASL_PLAINTEXT and SASL_SSL listeners for the
harness's own client: PLAIN users in the JAAS config, SCRAM users made with AlterUserScramCredentials
over PLAINTEXT, unsecured OAUTHBEARER; PLAIN on SASL_PLAINTEXT sessions last 2 s
(``connections.max.reauth.ms``), so its clients must re-authenticate (KIP-368)."""

from __future__ import annotations

import asyncio
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from kconform.codecs.messages import AlterUserScramCredentialsRequest
from kconform.harness.client.network import NetworkClient
from kconform.reference_broker.process import BrokerProcess, start_broker_process

from .certificates import Identity, TestAuthority

__all__ = ["SCRAM_PASSWORD", "SecuredBroker", "jaas", "start_secured_broker"]

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
SCRAM_PASSWORD = "alice-scram-secret"
REAUTH_MS = 2000


def jaas(module: str, **options: str) -> str:
    return f"{module} required " + " ".join(f'{k}="{v}"' for k, v in options.items()) + ";"


@dataclass
class SecuredBroker:
    node: BrokerProcess
    authority: TestAuthority
    client: Identity  # a client certificate the SSL listener accepts (CN=alice)
    directory: Path

    def bootstrap(self, protocol: str) -> str:
        return self.node.bootstrap_of(protocol)

    def properties(self, protocol: str, mechanism: str | None = None, *, password: str | None = None) -> dict:
        """Java client properties that reach ``protocol``'s listener as alice."""
        props = {"bootstrap.servers": self.bootstrap(protocol), "security.protocol": protocol}
        if protocol.endswith("SSL"):
            props |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.authority.ca)}
        if protocol == "SSL":
            props |= {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(self.client.combined)}
        if mechanism:
            props["sasl.mechanism"] = mechanism
            if mechanism == "OAUTHBEARER":
                props["sasl.jaas.config"] = jaas(OAUTH_MODULE, unsecuredLoginStringClaim_sub="alice")
            else:
                good = "alice-secret" if mechanism == "PLAIN" else SCRAM_PASSWORD
                module = PLAIN_MODULE if mechanism == "PLAIN" else SCRAM_MODULE
                props["sasl.jaas.config"] = jaas(module, username="alice", password=password or good)
        return props


def start_secured_broker(directory: Path) -> SecuredBroker:
    authority = TestAuthority(directory / "tls")
    server = authority.issue("broker", server=True, CN="localhost")
    client = authority.issue("alice", C="NO", O="kconform", OU="clients", CN="alice")
    plain = jaas(PLAIN_MODULE, username="admin", password="admin-secret", user_alice="alice-secret")
    overrides = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
        "SASL_SSL://127.0.0.1:0",
        "inter.broker.listener.name": "PLAINTEXT",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.combined),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(authority.ca),
        "listener.name.ssl.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "listener.name.sasl_plaintext.plain.connections.max.reauth.ms": str(REAUTH_MS),
        "num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    for listener in ("sasl_plaintext", "sasl_ssl"):
        overrides[f"listener.name.{listener}.plain.sasl.jaas.config"] = plain
        overrides[f"listener.name.{listener}.oauthbearer.sasl.jaas.config"] = f"{OAUTH_MODULE} required;"
        for mechanism in ("scram-sha-256", "scram-sha-512"):
            overrides[f"listener.name.{listener}.{mechanism}.sasl.jaas.config"] = f"{SCRAM_MODULE} required;"
    node = start_broker_process(directory / "data", overrides=overrides)
    try:
        asyncio.run(_add_scram_user(node.bootstrap_of("PLAINTEXT"), "alice", SCRAM_PASSWORD))
    except BaseException:
        node.stop()
        raise
    return SecuredBroker(node, authority, client, directory)


async def _add_scram_user(bootstrap: str, user: str, password: str) -> None:
    """SCRAM credentials as kafka-configs.sh makes them: a salted password per mechanism (RFC 5802's
    Hi() is PBKDF2 with the mechanism's hash), one request per mechanism."""
    client = NetworkClient(bootstrap)
    try:
        for code, digest in ((1, "sha256"), (2, "sha512")):
            salt = os.urandom(16)
            salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, 4096)
            upsert = AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
                name=user, mechanism=code, iterations=4096, salt=salt, salted_password=salted
            )
            response = await client.send_any(51, AlterUserScramCredentialsRequest(upsertions=[upsert]))
            assert response.results[0].error_code == 0, response
    finally:
        await client.close()
