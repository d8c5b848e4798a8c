"""SASL on one connection, sans I/O: which frames the authenticator answers itself, which go on to the
broker's handlers, and when the connection must close (Kafka's ``SaslServerAuthenticator`` with the
re-authentication parts of ``KafkaChannel`` and ``SocketServer``).

Before authentication only ApiVersions (once) and SaslHandshake are allowed; anything else closes the
connection. SaslHandshake v0 means raw, size-prefixed SASL tokens follow; v1 wraps them in
SaslAuthenticate requests. A failed exchange is answered (SASL_AUTHENTICATION_FAILED, or
UNSUPPORTED_SASL_MECHANISM for the handshake) and then closed after ``connection.failed.authentication
.delay.ms``. Once authenticated, every frame goes to the broker, except that a session past its
lifetime is closed at its next request and a SaslHandshake on a connection with a session lifetime
begins re-authentication (same mechanism, same principal, at most once a second)."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from kconform.codecs import DecodeError, api_schema, decode_request_header
from kconform.codecs.errors import Errors
from kconform.codecs.framing import encode_response
from kconform.codecs.messages import SaslAuthenticateResponse, SaslHandshakeResponse
from kconform.codecs.sasl import SaslAuthenticationError, SaslError, session_lifetime_ms

from .principals import KafkaPrincipal

__all__ = ["SaslAuthenticator", "Outcome"]

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
_MIN_REAUTH_INTERVAL_MS = 1000
_FAILED = Errors.SASL_AUTHENTICATION_FAILED


class _State(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "handshake or ApiVersions"
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    FAILED = "failed"


@dataclass(slots=True)
class Outcome:
    """What to do with one received frame: send ``replies`` (frames without size prefix), pass the
    frame to the broker (``forward``), and/or close, after ``close_delay_ms``."""

    replies: list[bytes] = field(default_factory=list)
    forward: bool = False
    close: bool = False
    close_delay_ms: int = 0
    reason: str = ""


class SaslAuthenticator:
    """``new_server(mechanism)`` makes a mechanism server (``kconform.codecs.sasl``);
    ``reauth_ms(mechanism)`` is ``connections.max.reauth.ms`` for it (0: no limit); ``serves(key,
    version)`` says whether the broker serves a request version (the handshake's versions included)."""

    def __init__(
        self,
        mechanisms: list[str],
        new_server: Callable[[str], object],
        *,
        reauth_ms: Callable[[str], int],
        serves: Callable[[int, int], bool],
        failed_delay_ms: int = 100,
    ) -> None:
        self.mechanisms = list(mechanisms)
        self._new_server = new_server
        self._reauth_ms = reauth_ms
        self._serves = serves
        self._failed_delay_ms = failed_delay_ms
        self.state = _State.HANDSHAKE_OR_VERSIONS
        self.mechanism: str | None = None
        self.principal: KafkaPrincipal | None = None
        self.session_expires_ms: int | None = None
        self._server = None
        self._kafka_headers = False  # SaslHandshake v1+: tokens come in SaslAuthenticate requests
        self._reauthenticating = False
        self._last_reauth_ms: int | None = None
        self._bad_mechanism: str | None = None  # a re-authentication asked for another mechanism

    @property
    def authenticated(self) -> bool:
        return self.state is _State.COMPLETE

    def receive(self, frame: bytes, now_ms: int) -> Outcome:
        if self.state is _State.FAILED:
            return Outcome(close=True, reason="authentication failed")
        if self.state is _State.COMPLETE:
            return self._after_authentication(frame, now_ms)
        if self.state is _State.AUTHENTICATE:
            return self._token(frame, now_ms)
        return self._handshake_phase(frame)

    # ---- before and during the handshake ---------------------------------------------------------

    def _handshake_phase(self, frame: bytes) -> Outcome:
        try:
            header, offset = decode_request_header(frame)
        except DecodeError:
            return self._fail_now("unreadable request header during SASL handshake")
        key, version = header.request_api_key, header.request_api_version
        if key not in (API_VERSIONS, SASL_HANDSHAKE):
            return self._fail_now(f"Unexpected Kafka request of type {key} during SASL handshake.")
        if key == API_VERSIONS:
            if self.state is not _State.HANDSHAKE_OR_VERSIONS:
                return self._fail_now("Unexpected ApiVersions request received during SASL authentication")
            if self._serves(key, version):  # an unsupported version is answered and may be retried
                self.state = _State.HANDSHAKE
            return Outcome(forward=True)
        request = self._decode(frame, offset, key, version)
        if request is None:
            return self._fail_now("malformed SaslHandshake request")
        return self._handshake(request.mechanism, version, header.correlation_id)

    def _handshake(self, mechanism: str, version: int, correlation_id: int) -> Outcome:
        self._kafka_headers = version >= 1
        if mechanism not in self.mechanisms or (self._reauthenticating and mechanism != self.mechanism):
            error = Errors.UNSUPPORTED_SASL_MECHANISM
            if self._reauthenticating and mechanism in self.mechanisms:
                # Kafka answers the handshake and fails on the first token (REAUTH_BAD_MECHANISM)
                error = Errors.NONE
            body = SaslHandshakeResponse(error_code=error, mechanisms=list(self.mechanisms))
            reply = encode_response(SASL_HANDSHAKE, version, correlation_id, body)
            if error:
                self.state = _State.FAILED
                return Outcome([reply], close=True, close_delay_ms=self._failed_delay_ms,
                               reason=f"Unsupported SASL mechanism {mechanism}")  # fmt: skip
            self._bad_mechanism = (
                f"SASL mechanism '{mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{self.mechanism}'"
            )
            self.state = _State.AUTHENTICATE
            return Outcome([reply])
        self._bad_mechanism = None
        self.mechanism = mechanism
        self._server = self._new_server(mechanism)
        self.state = _State.AUTHENTICATE
        body = SaslHandshakeResponse(error_code=Errors.NONE, mechanisms=list(self.mechanisms))
        return Outcome([encode_response(SASL_HANDSHAKE, version, correlation_id, body)])

    # ---- the SASL exchange -----------------------------------------------------------------------

    def _token(self, frame: bytes, now_ms: int) -> Outcome:
        if self._bad_mechanism:  # REAUTH_BAD_MECHANISM: Kafka closes without an answer
            return self._fail_now(self._bad_mechanism)
        if not self._kafka_headers:
            return self._raw_token(bytes(frame), now_ms)
        try:
            header, offset = decode_request_header(frame)
        except DecodeError:
            return self._fail_now("unreadable request header during SASL authentication")
        key, version = header.request_api_key, header.request_api_version
        correlation_id = header.correlation_id
        if key != SASL_AUTHENTICATE:
            message = f"Unexpected Kafka request of type {key} during SASL authentication."
            reply = _illegal_state_reply(key, version, correlation_id, message)
            self.state = _State.FAILED
            return Outcome([reply] if reply else [], close=True, close_delay_ms=self._failed_delay_ms,
                           reason=message)  # fmt: skip
        if not self._serves(key, version):
            return self._fail_now(f"Version {version} is not supported for apiKey SASL_AUTHENTICATE")
        request = self._decode(frame, offset, key, version)
        if request is None:
            return self._fail_now("malformed SaslAuthenticate request")

        def reply(body) -> bytes:
            return encode_response(SASL_AUTHENTICATE, version, correlation_id, body)

        try:
            token = self._evaluate(bytes(request.auth_bytes))
        except SaslAuthenticationError as exc:
            message = exc.error_message(reauthenticating=self._reauthenticating)
            body = SaslAuthenticateResponse(error_code=_FAILED, error_message=message)
            self.state = _State.FAILED
            return Outcome([reply(body)], close=True, close_delay_ms=self._failed_delay_ms, reason=exc.reason)
        except SaslError as exc:  # an illegal state: Kafka closes without an answer
            return self._fail_now(str(exc))
        lifetime = self._finish(now_ms) if self._server.complete else 0
        if lifetime is None:
            return self._principal_changed(reply)
        body = SaslAuthenticateResponse(auth_bytes=token, session_lifetime_ms=lifetime)
        return Outcome([reply(body)])

    def _raw_token(self, token: bytes, now_ms: int) -> Outcome:
        """SaslHandshake v0: the token is the whole frame, the answer too; a failure just closes."""
        try:
            answer = self._evaluate(token)
        except SaslError as exc:
            return self._fail_now(str(exc))
        if self._server.complete and self._finish(now_ms) is None:
            return self._fail_now("Cannot change principals during re-authentication")
        return Outcome([answer] if answer else [])

    def _evaluate(self, token: bytes) -> bytes:
        return self._server.respond(token) or b""

    def _finish(self, now_ms: int) -> int | None:
        """Authentication is complete: the principal, and the session lifetime to tell the client
        (``ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs``); None if a re-authentication
        names another principal."""
        principal = KafkaPrincipal("User", self._server.authorization_id)
        if self._reauthenticating and principal != self.principal:
            return None
        self.principal = principal
        self.state = _State.COMPLETE
        self._reauthenticating = False
        expires = self._server.credential_expiry_ms
        max_reauth = self._reauth_ms(self.mechanism)
        lifetime = session_lifetime_ms(expires, max_reauth, now_ms=now_ms)
        # a session expires only when the credential or connections.max.reauth.ms says so
        self.session_expires_ms = None if expires is None and max_reauth <= 0 else now_ms + lifetime
        return lifetime

    def _principal_changed(self, reply) -> Outcome:
        new = KafkaPrincipal("User", self._server.authorization_id)
        message = (
            f"Cannot change principals during re-authentication from {self.principal.principal_type}."
            f"{self.principal.name}: {new.principal_type}.{new.name}"
        )
        body = SaslAuthenticateResponse(error_code=Errors.SASL_AUTHENTICATION_FAILED, error_message=message)
        self.state = _State.FAILED
        return Outcome([reply(body)], close=True, close_delay_ms=self._failed_delay_ms, reason=message)

    # ---- after authentication --------------------------------------------------------------------

    def _after_authentication(self, frame: bytes, now_ms: int) -> Outcome:
        key = _api_key(frame)
        if key == SASL_HANDSHAKE and self._may_reauthenticate(now_ms):
            self._last_reauth_ms = now_ms
            self._reauthenticating = True
            self.state = _State.HANDSHAKE
            return self._handshake_phase(frame)
        if self.session_expires_ms is not None and now_ms >= self.session_expires_ms:
            self.state = _State.FAILED
            return Outcome(close=True, reason="the authenticated session expired")
        return Outcome(forward=True)

    def _may_reauthenticate(self, now_ms: int) -> bool:
        if self.session_expires_ms is None:  # no lifetime: the broker's handler answers ILLEGAL_SASL_STATE
            return False
        return self._last_reauth_ms is None or now_ms - self._last_reauth_ms >= _MIN_REAUTH_INTERVAL_MS

    # ---- helpers ---------------------------------------------------------------------------------

    @property
    def _text(self) -> str:
        return "re-authentication" if self._reauthenticating else "authentication"

    def _decode(self, frame: bytes, offset: int, key: int, version: int):
        if not self._serves(key, version):
            return None
        try:
            request, _end, _buf = api_schema(key).request._decode_at(frame, offset, version)
        except DecodeError:
            return None
        return request

    def _fail_now(self, reason: str) -> Outcome:
        self.state = _State.FAILED
        return Outcome(close=True, reason=reason)


def _api_key(frame: bytes) -> int | None:
    return int.from_bytes(frame[:2], "big", signed=True) if len(frame) >= 2 else None


def _illegal_state_reply(key: int, version: int, correlation_id: int, message: str) -> bytes | None:
    """The request's own response carrying ILLEGAL_SASL_STATE, where it has a top-level error field
    (Kafka's ``getErrorResponse``); None when it has none, and the connection just closes."""
    try:
        schema = api_schema(key)
        schema.check(version)
    except Exception:
        return None
    body = schema.response()
    fields = {f.attr: f for f in schema.response._fields_}
    error = fields.get("error_code")
    if error is None or not error.present(version):
        return None
    body.error_code = Errors.ILLEGAL_SASL_STATE
    if "error_message" in fields and fields["error_message"].present(version):
        body.error_message = message
    try:
        return encode_response(key, version, correlation_id, body)
    except Exception:
        return None
