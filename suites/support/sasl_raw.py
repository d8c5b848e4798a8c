"""A raw client that has logged in: SaslHandshake v1 then SaslAuthenticate on one connection, before
any other request (Kafka's order for a SASL listener, ``SaslServerAuthenticator``)."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import SaslAuthenticateRequest, SaslHandshakeRequest
from kconform.codecs.sasl import client_for

from .rawclient import RawClient

__all__ = ["sasl_client"]


async def sasl_client(
    host: str, port: int, username: str, password: str, mechanism: str = "PLAIN"
) -> RawClient:
    """A connected RawClient authenticated as ``username``; raises AssertionError naming the step that
    failed."""
    client = await RawClient.connect(host, port, client_id=f"sasl-{username}")
    try:
        handshake = await client.call(17, 1, SaslHandshakeRequest(mechanism=mechanism))
        assert handshake.error_code == Errors.NONE, f"SaslHandshake for {username}: {handshake}"
        sasl = client_for(mechanism, username=username, password=password)
        token = sasl.initial()
        while True:
            answer = await client.call(36, 2, SaslAuthenticateRequest(auth_bytes=token))
            assert answer.error_code == Errors.NONE, f"SaslAuthenticate for {username}: {answer}"
            token = sasl.respond(bytes(answer.auth_bytes))
            if token is None:
                return client
    except BaseException:
        await client.close()
        raise
