"""Logging in to another node over SASL (Kafka's ``SaslClientAuthenticator`` as a broker's inter-broker
client runs it): after ApiVersions, SaslHandshake v1 with the mechanism, then SaslAuthenticate rounds
until the mechanism is complete. A refusal comes back as the reason, which the connection turns into
``PeerUnavailable``, so the channel backs off and tries again as it does for any unreachable node."""

from __future__ import annotations

from kconform.codecs.errors import Errors, error_for
from kconform.codecs.messages import SaslAuthenticateRequest, SaslHandshakeRequest
from kconform.codecs.sasl import SaslError, client_for

from .security.peer_security import PeerSecurity

__all__ = ["sasl_login"]

_SASL_HANDSHAKE, _SASL_AUTHENTICATE = 17, 36


async def sasl_login(conn, security: PeerSecurity, timeout_s: float) -> str | None:
    """None once logged in on ``conn`` (an ``InterBrokerConnection``), else why not."""
    mechanism = security.mechanism
    handshake = await conn.send(
        _SASL_HANDSHAKE, SaslHandshakeRequest(mechanism=mechanism), version=1, timeout_s=timeout_s
    )
    if handshake.error_code != Errors.NONE:
        offered = ", ".join(handshake.mechanisms)
        return f"{error_for(handshake.error_code).name} for {mechanism} (offered: {offered})"
    client = client_for(mechanism, **security.sasl_options())
    version = conn.version_for(_SASL_AUTHENTICATE, 2)
    try:
        token = client.initial()
        while token is not None:
            request = SaslAuthenticateRequest(auth_bytes=token)
            answer = await conn.send(_SASL_AUTHENTICATE, request, version=version, timeout_s=timeout_s)
            if answer.error_code != Errors.NONE:
                name = error_for(answer.error_code).name
                return f"{name}: {answer.error_message or 'no message'}"
            token = client.respond(bytes(answer.auth_bytes))
    except SaslError as exc:  # the server's answer failed the mechanism (e.g. a wrong server signature)
        return str(exc)
    return None
