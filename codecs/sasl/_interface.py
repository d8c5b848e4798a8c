"""What every mechanism offers the broker's authenticator and the harness's client, and the one rule of
KIP-368 that needs a mechanism's answer: how long the session may last."""

from __future__ import annotations

from typing import Protocol

__all__ = ["SaslClient", "SaslServer", "session_lifetime_ms"]


class SaslServer(Protocol):
    """One exchange on the broker side. ``respond`` takes a SaslAuthenticate ``auth_bytes`` and returns the
    reply's; it raises ``SaslAuthenticationError`` (SASL_AUTHENTICATION_FAILED, its ``error_message()``
    for the reply) or ``SaslIllegalStateError`` (ILLEGAL_SASL_STATE)."""

    mechanism: str

    @property
    def complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str | None: ...  # the principal name, once complete

    @property
    def credential_expiry_ms(self) -> int | None: ...  # when the credential expires (epoch ms), if ever

    def respond(self, token: bytes) -> bytes: ...


class SaslClient(Protocol):
    """One exchange on the client side: ``initial()`` once, then ``respond(challenge)`` for each server
    reply until it returns ``None``."""

    mechanism: str

    @property
    def complete(self) -> bool: ...

    def initial(self) -> bytes: ...

    def respond(self, challenge: bytes) -> bytes | None: ...


def session_lifetime_ms(credential_expiry_ms: int | None, max_reauth_ms: int | None, *, now_ms: int) -> int:
    """SaslAuthenticate's ``session_lifetime_ms`` when the exchange completes at ``now_ms``: the time left
    on the credential, capped by ``connections.max.reauth.ms``; 0 when neither applies, never negative
    (``SaslServerAuthenticator.ReauthInfo``)."""
    reauth = max_reauth_ms if max_reauth_ms is not None and max_reauth_ms > 0 else None
    if credential_expiry_ms is None:
        return 0 if reauth is None else reauth
    left = credential_expiry_ms - now_ms
    return max(0, left if reauth is None else min(left, reauth))
