"""SASL/OAUTHBEARER (RFC 7628), both sides, with Kafka's unsecured-token defaults: the client initial
response of ``OAuthBearerClientInitialResponse``, the server of ``OAuthBearerSaslServer`` judging tokens as
``OAuthBearerUnsecuredValidatorCallbackHandler`` does, and the client of ``OAuthBearerSaslClient``.

A refused token is not an immediate failure: the server answers with a JSON error, the client answers that
with a single ``\\x01``, and only then does the server fail, with the JSON as its message."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ._errors import SaslAuthenticationError, SaslIllegalStateError
from ._unsecured_jws import IllegalToken, validate_unsecured_jws

__all__ = [
    "OAUTHBEARER",
    "InitialResponse",
    "OAuthBearerClient",
    "OAuthBearerServer",
    "UnsecuredValidatorOptions",
    "initial_response",
    "parse_initial_response",
]

OAUTHBEARER = "OAUTHBEARER"
CONTROL_A = b"\x01"

_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_KVPAIRS = r"(?:[A-Za-z]+=[\x21-\x7e \t\r\n]+\x01)*"
_INITIAL_RESPONSE = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>{_KVPAIRS})\x01")
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)", re.ASCII)
_SCOPE_ITEM = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")


@dataclass(frozen=True)
class InitialResponse:
    token: str
    authorization_id: str = ""
    extensions: tuple[tuple[str, str], ...] = ()


def initial_response(
    token: str, authorization_id: str = "", extensions: Mapping[str, str] | None = None
) -> bytes:
    """``n,[a=authzid],^Aauth=Bearer <token>[^Akey=value...]^A^A``."""
    extra = "".join(f"\x01{key}={value}" for key, value in (extensions or {}).items())
    authzid = f"a={authorization_id}" if authorization_id else ""
    return f"n,{authzid},\x01auth=Bearer {token}{extra}\x01\x01".encode()


def parse_initial_response(data: bytes) -> InitialResponse:
    """Raises ``SaslAuthenticationError`` (hidden, as Kafka's are plain ``SaslException``s)."""
    match = _INITIAL_RESPONSE.fullmatch(bytes(data).decode("utf-8", "replace"))
    if match is None:
        raise SaslAuthenticationError.hiding(OAUTHBEARER, "Invalid OAUTHBEARER client first message")
    pairs: dict[str, str] = {}
    for pair in filter(None, match["kvpairs"].split("\x01")):
        key, _, value = pair.partition("=")
        pairs[key] = value
    auth = pairs.pop("auth", None)
    if auth is None:
        raise SaslAuthenticationError.hiding(
            OAUTHBEARER, "Invalid OAUTHBEARER client first message: 'auth' not specified"
        )
    auth_match = _AUTH.fullmatch(auth)
    if auth_match is None:
        raise SaslAuthenticationError.hiding(
            OAUTHBEARER, "Invalid OAUTHBEARER client first message: invalid 'auth' format"
        )
    if auth_match["scheme"].lower() != "bearer":
        # Kafka means to say this but names a group of the wrong matcher and dies with an
        # IllegalArgumentException; the client sees the connection close either way
        raise SaslAuthenticationError.hiding(
            OAUTHBEARER, f"Invalid scheme in OAUTHBEARER client first message: {auth_match['scheme']}"
        )
    return InitialResponse(auth_match["token"], match["authzid"] or "", tuple(pairs.items()))


@dataclass(frozen=True)
class UnsecuredValidatorOptions:
    """The ``unsecuredValidator*`` JAAS options, with Kafka's defaults."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    allowable_clock_skew_ms: int = 0

    def __post_init__(self) -> None:
        if self.allowable_clock_skew_ms < 0:
            raise ValueError(
                f"Allowable clock skew millis must not be negative: {self.allowable_clock_skew_ms}"
            )

    @classmethod
    def from_jaas(cls, options: Mapping[str, str]) -> UnsecuredValidatorOptions:
        def option(name: str) -> str:
            return (options.get(f"unsecuredValidator{name}") or "").strip()

        scope = []
        for item in option("RequiredScope").split(" "):
            if item and not _SCOPE_ITEM.fullmatch(item):
                raise ValueError(f"Invalid scope value: {item}")
            if item:
                scope.append(item)
        skew = option("AllowableClockSkewMs")
        return cls(
            option("PrincipalClaimName") or "sub",
            option("ScopeClaimName") or "scope",
            tuple(scope),
            int(skew) if skew else 0,
        )


def _json_error(status: str, scope: str | None) -> str:
    text = f'{{"status":"{status}"'
    if scope is not None:
        text += f', "scope":"{scope}"'
    return text + "}"


class OAuthBearerServer:
    """The broker side. ``now_ms()`` is the clock the token's ``iat`` and ``exp`` are judged by."""

    mechanism = OAUTHBEARER

    def __init__(self, now_ms: Callable[[], int], options: UnsecuredValidatorOptions | None = None) -> None:
        self._now_ms = now_ms
        self._options = options or UnsecuredValidatorOptions()
        self._state = "waiting"  # -> "complete" | "failed"
        self._pending_error: str | None = None
        self.authorization_id: str | None = None
        self.credential_expiry_ms: int | None = None  # the token's exp, ms: caps the session (KIP-368)
        self.extensions: dict[str, str] = {}
        self.refusal_reason: str | None = None  # why the last token was refused, for the broker's log

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    def respond(self, token: bytes) -> bytes:
        if self._state != "waiting":
            raise SaslIllegalStateError(f"Unexpected SASL/OAUTHBEARER response in state {self._state}")
        try:
            return self._respond(bytes(token))
        except SaslAuthenticationError:
            self._state = "failed"
            raise

    def _respond(self, token: bytes) -> bytes:
        if token == CONTROL_A and self._pending_error is not None:
            raise SaslAuthenticationError(self._pending_error)
        self._pending_error = None  # anything else starts over, as Kafka's server does
        response = parse_initial_response(token)
        options = self._options
        try:
            jws = validate_unsecured_jws(
                response.token,
                now_ms=self._now_ms(),
                principal_claim=options.principal_claim,
                scope_claim=options.scope_claim,
                required_scope=options.required_scope,
                allowable_clock_skew_ms=options.allowable_clock_skew_ms,
            )
        except IllegalToken as refused:
            status = "invalid_token" if refused.scope is None else "insufficient_scope"
            self._pending_error = _json_error(status, refused.scope)
            self.refusal_reason = refused.reason
            return self._pending_error.encode()
        if response.authorization_id and response.authorization_id != jws.principal_name:
            raise SaslAuthenticationError(
                f"Authentication failed: Client requested an authorization id ({response.authorization_id}) "
                f"that is different from the token's principal name ({jws.principal_name})"
            )
        self.extensions = dict(response.extensions)  # the unsecured validator accepts every extension
        self.authorization_id = jws.principal_name
        self.credential_expiry_ms = jws.lifetime_ms
        self._state = "complete"
        return b""


class OAuthBearerClient:
    """The client side: sends the token, answers a JSON error with ``\\x01``, completes on an empty reply.
    ``server_error`` keeps the JSON the server sent, if any."""

    mechanism = OAUTHBEARER

    def __init__(
        self, token: str, *, authorization_id: str = "", extensions: Mapping[str, str] | None = None
    ) -> None:
        self._initial = initial_response(token, authorization_id, extensions)
        self._state = "SEND_CLIENT_FIRST_MESSAGE"
        self.server_error: str | None = None

    @property
    def complete(self) -> bool:
        return self._state == "COMPLETE"

    def initial(self) -> bytes:
        if self._state != "SEND_CLIENT_FIRST_MESSAGE":
            raise SaslIllegalStateError(f"Unexpected challenge in Sasl client state {self._state}")
        self._state = "RECEIVE_SERVER_FIRST_MESSAGE"
        return self._initial

    def respond(self, challenge: bytes) -> bytes | None:
        if self._state != "RECEIVE_SERVER_FIRST_MESSAGE":
            raise SaslIllegalStateError(f"Unexpected challenge in Sasl client state {self._state}")
        if challenge:
            self.server_error = bytes(challenge).decode("utf-8", "replace")
            self._state = "RECEIVE_SERVER_MESSAGE_AFTER_FAILURE"
            return CONTROL_A
        self._state = "COMPLETE"
        return None
