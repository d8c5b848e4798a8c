"""SASL authentication of one connection, as Kafka's ``SaslClientAuthenticator`` does it after
ApiVersions: SaslHandshake v1 names the mechanism, then SaslAuthenticate (the highest version both
sides speak, v0-2) carries the mechanism's tokens until the client is complete.

The exchange talks through ``call(api_key, version, body) -> response``, so the same driver serves the
pipelined connection and the raw client, and a re-authentication (KIP-368) is the same exchange again.
``reauth_delay_s`` is the pure rule for when to re-authenticate."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

from kconform.codecs.errors import Errors
from kconform.codecs.messages import SaslAuthenticateRequest, SaslHandshakeRequest
from kconform.codecs.sasl import SaslError

from .errors import BrokerError

__all__ = ["AuthenticationFailed", "SASL_AUTHENTICATE", "SASL_HANDSHAKE", "authenticate", "reauth_delay_s"]

SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
_MAX_ROUNDS = 32  # no mechanism here needs more than 3; a broker that never finishes is refused

Call = Callable[[int, int, Any], Awaitable[Any]]


class AuthenticationFailed(BrokerError):
    """The broker refused the login: ``code`` is its error (SASL_AUTHENTICATION_FAILED,
    UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE), ``broker_message`` its words; ``mechanisms`` what it
    offers when the mechanism was refused."""

    def __init__(self, code: int, context: str, message: str | None = None, mechanisms=()) -> None:
        self.mechanisms = list(mechanisms)
        super().__init__(code, context, message)


async def authenticate(
    call: Call, credentials, versions: dict[int, tuple[int, int]], *, now_ms: int, node: str
) -> int:
    """Log in with ``credentials`` (``security.SaslCredentials``); returns the session lifetime the
    broker gave (ms, 0 for none). Raises AuthenticationFailed with the broker's code and message."""
    mechanism = credentials.mechanism
    handshake_range = versions.get(SASL_HANDSHAKE)
    authenticate_range = versions.get(SASL_AUTHENTICATE)
    if handshake_range is None or handshake_range[1] < 1 or authenticate_range is None:
        raise AuthenticationFailed(
            Errors.ILLEGAL_SASL_STATE,
            f"{node} does not offer SaslHandshake v1 and SaslAuthenticate (needed for SASL)",
        )
    answer = await call(SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism=mechanism))
    if answer.error_code:
        offered = ", ".join(answer.mechanisms) or "none"
        raise AuthenticationFailed(
            answer.error_code,
            f"SaslHandshake for {mechanism} to {node}",
            f"the broker offers {offered}",
            answer.mechanisms,
        )
    version = min(authenticate_range[1], 2)
    client = credentials.client(now_ms)
    token: bytes | None = client.initial()
    lifetime = 0
    for _ in range(_MAX_ROUNDS):
        answer = await call(SASL_AUTHENTICATE, version, SaslAuthenticateRequest(auth_bytes=token))
        if answer.error_code:
            raise AuthenticationFailed(
                answer.error_code, f"SaslAuthenticate {mechanism} to {node}", answer.error_message
            )
        lifetime = answer.session_lifetime_ms if version >= 1 else 0
        if client.complete:  # PLAIN and OAUTHBEARER are done once the broker accepts the first token
            return lifetime
        try:
            token = client.respond(bytes(answer.auth_bytes))
        except SaslError as exc:  # e.g. a SCRAM server signature that does not verify
            raise AuthenticationFailed(
                Errors.SASL_AUTHENTICATION_FAILED, f"SaslAuthenticate {mechanism} to {node}", str(exc)
            ) from None
        if token is None:
            if client.complete:
                return lifetime
            break
    raise AuthenticationFailed(
        Errors.ILLEGAL_SASL_STATE, f"SaslAuthenticate {mechanism} to {node}", "the exchange did not complete"
    )


def reauth_delay_s(lifetime_ms: int, draw: Callable[[], float] = random.random) -> float | None:
    """When to re-authenticate after a login that gave ``lifetime_ms``: at 85-95% of it, as KIP-368's
    client does (``SaslClientAuthenticator.ReauthInfo``); None when the session does not expire."""
    if lifetime_ms <= 0:
        return None
    return lifetime_ms * (0.85 + 0.1 * draw()) / 1000
