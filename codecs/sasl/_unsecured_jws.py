"""Kafka's unsecured OAUTHBEARER tokens: ``base64url(header).base64url(claims).`` with ``"alg":"none"``.

``parse_unsecured_jws`` reads one as ``OAuthBearerUnsecuredJws`` does, ``validate_unsecured_jws`` judges
it as ``OAuthBearerUnsecuredValidatorCallbackHandler`` with ``OAuthBearerValidationUtils`` does (the clock is
passed in), and ``unsecured_token`` writes one as ``OAuthBearerUnsecuredLoginCallbackHandler`` does."""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass, field

__all__ = ["IllegalToken", "UnsecuredJws", "parse_unsecured_jws", "unsecured_token", "validate_unsecured_jws"]

_STANDARD_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


class IllegalToken(Exception):
    """A token the validator refuses. ``scope`` is set (Java's list text of the required scope) when the
    refusal is for a missing scope, which Kafka reports as ``insufficient_scope``."""

    def __init__(self, reason: str, scope: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.scope = scope


@dataclass(frozen=True)
class UnsecuredJws:
    value: str = field(repr=False)
    claims: dict = field(repr=False)
    principal_name: str
    scope: frozenset[str]
    lifetime_ms: int  # the expiry, epoch ms
    start_time_ms: int | None


def _java_type(value: object) -> str:
    if isinstance(value, str):
        return "String"
    if isinstance(value, list):
        return "ArrayList"
    if isinstance(value, float):
        return "Double"
    if isinstance(value, int):
        return (
            "Integer" if -(2**31) <= value < 2**31 else "Long" if -(2**63) <= value < 2**63 else "BigInteger"
        )
    return type(value).__name__


def _as_text(value: object) -> str:
    """Jackson's ``asText``: booleans and null as words, objects and arrays as nothing."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict | list):
        return ""
    return str(value)


def _claim_value(value: object) -> object:
    # what Kafka keeps of a JSON value: arrays as lists of text, numbers as numbers, the rest as text
    if isinstance(value, list):
        return [_as_text(item) for item in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return _as_text(value)


def _decode_json_object(split: str) -> dict:
    # Kafka decodes each part with Java's *basic* Base64 decoder (padding optional), not the URL-safe one
    if not _STANDARD_BASE64.fullmatch(split) or ("=" in split and len(split) % 4) or len(split) % 4 == 1:
        raise IllegalToken("malformed Base64 URL encoded value")
    try:
        raw = base64.b64decode(split + "=" * (-len(split) % 4))
    except binascii.Error as error:
        raise IllegalToken("malformed Base64 URL encoded value") from error
    try:
        document = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise IllegalToken("malformed JSON") from error
    if not isinstance(document, dict):
        return {}  # Kafka reads the fields of a non-object as none at all
    return {key: _claim_value(value) for key, value in document.items()}


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _claim(claims: dict, name: str, kind: type, java_kind: str) -> object:
    value = claims.get(name)
    if value is not None and not isinstance(value, kind):
        raise IllegalToken(f"The '{name}' claim was not of type {java_kind}: {_java_type(value)}")
    return value


def _blank(text: str | None) -> bool:
    return text is None or not text.strip(_JAVA_TRIMMED)


_JAVA_TRIMMED = "".join(chr(c) for c in range(0x21))  # String.trim() drops every char up to the space


def _scope(claims: dict, name: str) -> frozenset[str]:
    value = claims.get(name)
    if isinstance(value, str):
        return frozenset() if _blank(value) else frozenset({value.strip(_JAVA_TRIMMED)})
    items = _claim(claims, name, list, "List") or []
    return frozenset(item.strip(_JAVA_TRIMMED) for item in items if not _blank(item))


def parse_unsecured_jws(value: str, principal_claim: str = "sub", scope_claim: str = "scope") -> UnsecuredJws:
    if ".." in value:
        raise IllegalToken("Malformed compact serialization contains '..'")
    splits = value.split(".")
    if len(splits) != 3:
        raise IllegalToken(
            "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values"
        )
    header, claims = _decode_json_object(splits[0]), _decode_json_object(splits[1])
    if "alg" not in header:  # Kafka fails with a NullPointerException here
        raise IllegalToken("JWS header must have an Algorithm value")
    if header["alg"] != "none":
        raise IllegalToken("Unsecured JWS must have 'none' for an algorithm")
    if splits[2]:
        raise IllegalToken("Unsecured JWS must not contain a digital signature")
    scope = _scope(claims, scope_claim)
    expiry = _claim(claims, "exp", int | float, "Number")
    if expiry is None:
        raise IllegalToken("No expiration time in JWT")
    principal = _claim(claims, principal_claim, str, "String")
    if _blank(principal):
        raise IllegalToken(f"No principal name in JWT claim: {principal_claim}")
    issued = _claim(claims, "iat", int | float, "Number")
    return UnsecuredJws(
        value, claims, principal, scope, _to_ms(expiry), None if issued is None else _to_ms(issued)
    )


def _seconds(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:  # a JSON integer past a double: Java's doubleValue gives infinity
        return math.inf if value > 0 else -math.inf  # type: ignore[operator]


def _to_ms(seconds: object) -> int:
    # Math.round: floor(x + 0.5), saturating at the ends of a long, NaN as 0
    millis = _seconds(seconds) * 1000
    if millis != millis:
        return 0
    if abs(millis) >= 2.0**63:
        return 2**63 - 1 if millis > 0 else -(2**63)
    return math.floor(millis + 0.5)


def validate_unsecured_jws(
    value: str,
    *,
    now_ms: int,
    principal_claim: str = "sub",
    scope_claim: str = "scope",
    required_scope: tuple[str, ...] = (),
    allowable_clock_skew_ms: int = 0,
) -> UnsecuredJws:
    """The token, or ``IllegalToken`` with Kafka's reason; checks run in Kafka's order."""
    if allowable_clock_skew_ms < 0:
        raise ValueError(f"Allowable clock skew millis must not be negative: {allowable_clock_skew_ms}")
    jws = parse_unsecured_jws(value, principal_claim, scope_claim)
    issued = None if jws.claims.get("iat") is None else _seconds(jws.claims["iat"])
    if issued is not None and 1000 * issued > now_ms + allowable_clock_skew_ms:
        raise IllegalToken(
            f"The Issued At value ({issued:f} seconds) was after the indicated time ({now_ms} ms) "
            f"plus allowable clock skew ({allowable_clock_skew_ms} ms)"
        )
    expiry = _seconds(jws.claims["exp"])
    if now_ms - allowable_clock_skew_ms >= 1000 * expiry:
        raise IllegalToken(
            f"The indicated time ({now_ms} ms) minus allowable clock skew ({allowable_clock_skew_ms} ms) "
            f"was on or after the Expiration Time value ({expiry:f} seconds)"
        )
    if issued is not None and expiry <= issued:
        raise IllegalToken(
            f"The Expiration Time time ({expiry:f} seconds) was not after the Issued At time "
            f"({issued:f} seconds)"
        )
    required_text = "[" + ", ".join(required_scope) + "]"  # Java's List.toString
    for element in required_scope:
        if element not in jws.scope:
            raise IllegalToken(
                f"The provided scope ({_java_set(jws.scope)}) was missing a required scope ({element}).  "
                f"All required scope elements: {required_text}",
                scope=required_text,
            )
    return jws


def _java_set(items: frozenset[str]) -> str:
    return "[" + ", ".join(sorted(items)) + "]"  # Java's HashSet order differs; the members are the same


def unsecured_token(
    principal: str,
    *,
    now_ms: int,
    lifetime_seconds: int = 3600,
    scope: tuple[str, ...] | None = None,
    principal_claim: str = "sub",
    scope_claim: str = "scope",
) -> str:
    """A token as ``OAuthBearerUnsecuredLoginCallbackHandler`` makes one: ``exp``, ``iat`` (seconds, as
    decimals), the principal claim and, when given, the scope as a list; base64url without padding."""
    claims: dict[str, object] = {
        "exp": now_ms / 1000.0 + lifetime_seconds,
        "iat": now_ms / 1000.0,
        principal_claim: principal,
    }
    if scope is not None:
        claims[scope_claim] = list(scope)

    def part(document: dict) -> str:
        text = json.dumps(document, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(text).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part(claims)}."
