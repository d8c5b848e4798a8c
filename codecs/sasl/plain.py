"""SASL/PLAIN (RFC 4616), both sides, with the rules and messages of Kafka's ``PlainSaslServer`` and
``PlainServerCallbackHandler``: ``authzid NUL authcid NUL passwd`` in one token, one round."""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping

from ._errors import SaslAuthenticationError, SaslIllegalStateError

__all__ = ["PLAIN", "PlainClient", "PlainServer", "password_check", "plain_token"]

PLAIN = "PLAIN"
_NUL = "\x00"


def password_check(passwords: Mapping[str, str]) -> Callable[[str, str], bool]:
    """The broker's check from JAAS ``user_<name>="<password>"`` options, compared in constant time as
    ``PlainServerCallbackHandler`` does."""

    def check(username: str, password: str) -> bool:
        expected = passwords.get(username)
        return expected is not None and hmac.compare_digest(password.encode(), expected.encode())

    return check


def plain_token(username: str, password: str, authorization_id: str = "") -> bytes:
    return f"{authorization_id}{_NUL}{username}{_NUL}{password}".encode()


def _tokens(response: str) -> list[str]:
    # Kafka reads at most four NUL-separated pieces, so the count it reports is never above 4
    pieces = response.split(_NUL, 3)
    if len(pieces) != 3:
        raise SaslAuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(pieces)}")
    return pieces


class PlainServer:
    """One PLAIN exchange on the broker side. ``check(username, password)`` says whether they match."""

    mechanism = PLAIN
    credential_expiry_ms: int | None = None  # PLAIN credentials do not expire

    def __init__(self, check: Callable[[str, str], bool]) -> None:
        self._check = check
        self._state = "waiting"  # -> "complete" | "failed"
        self.authorization_id: str | None = None

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    def respond(self, token: bytes) -> bytes:
        if self._state != "waiting":
            raise SaslIllegalStateError(f"Unexpected SASL/PLAIN response in state {self._state}")
        try:
            username = self._authenticate(bytes(token).decode("utf-8", "replace"))
        except SaslAuthenticationError:
            self._state = "failed"
            raise
        self.authorization_id = username
        self._state = "complete"
        return b""

    def _authenticate(self, response: str) -> str:
        requested, username, password = _tokens(response)
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        try:
            matched = self._check(username, password)
        except Exception as error:  # Kafka turns any callback failure into this message
            raise SaslAuthenticationError(
                "Authentication failed: credentials for user could not be verified", reason=repr(error)
            ) from error
        if not matched:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if requested and requested != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        return username


class PlainClient:
    """The client side: everything goes in the initial response; the server answers with an empty token."""

    mechanism = PLAIN

    def __init__(self, username: str, password: str, authorization_id: str = "") -> None:
        self._token = plain_token(username, password, authorization_id)
        self._sent = False

    @property
    def complete(self) -> bool:
        return self._sent

    def initial(self) -> bytes:
        if self._sent:
            raise SaslIllegalStateError("SASL/PLAIN initial response already sent")
        self._sent = True
        return self._token

    def respond(self, challenge: bytes) -> bytes | None:
        if not self._sent:
            raise SaslIllegalStateError("SASL/PLAIN challenge before the initial response")
        if challenge:
            raise SaslAuthenticationError(f"Unexpected SASL/PLAIN challenge of {len(challenge)} bytes")
        return None
