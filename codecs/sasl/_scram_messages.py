"""The four SCRAM messages, parsed with the grammar of Kafka's ``ScramMessages`` (a subset of RFC 5802:
no channel binding, so the GS2 header is always ``n,``) and written as Kafka writes them.

Each parser returns ``None`` for text that does not match; the caller words the error, because Kafka's
server and client word it differently."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass

__all__ = [
    "ClientFinal",
    "ClientFirst",
    "ServerFinal",
    "ServerFirst",
    "b64",
    "parse_client_final",
    "parse_client_first",
    "parse_server_final",
    "parse_server_first",
]

# Java's character-class intersections spelled out: VALUE is \x01-\x7F but ',', SAFE also without '='
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
_VALUE_SAFE = r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_BASE64 = r"(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?"
_RESERVED = rf"(?:m={_VALUE},)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"

_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_RESERVED}n=(?P<name>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})"
    rf"(?P<extensions>{_EXTENSIONS})"
)
_SERVER_FIRST = re.compile(
    rf"{_RESERVED}r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_BASE64}),i=(?P<iterations>[0-9]+){_EXTENSIONS}"
)
_CLIENT_FINAL = re.compile(
    rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS},p=(?P<proof>{_BASE64})"
)
_SERVER_FINAL = re.compile(rf"e=(?P<error>{_VALUE_SAFE})|v=(?P<signature>{_BASE64}){_EXTENSIONS}")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@dataclass(frozen=True)
class ClientFirst:
    sasl_name: str
    nonce: str
    authorization_id: str = ""
    extensions: tuple[tuple[str, str], ...] = ()

    def bare(self) -> str:
        """client-first-message-bare as Kafka rebuilds it (the reserved ``m=`` part is not kept)."""
        extra = "".join(f",{key}={value}" for key, value in self.extensions)
        return f"n={self.sasl_name},r={self.nonce}{extra}"

    def to_bytes(self) -> bytes:
        return f"n,{self.authorization_id},{self.bare()}".encode()


@dataclass(frozen=True)
class ServerFirst:
    nonce: str  # client nonce + server nonce
    salt: bytes
    iterations: int

    def text(self) -> str:
        return f"r={self.nonce},s={b64(self.salt)},i={self.iterations}"


@dataclass(frozen=True)
class ClientFinal:
    channel_binding: bytes
    nonce: str
    proof: bytes = b""

    def without_proof(self) -> str:
        return f"c={b64(self.channel_binding)},r={self.nonce}"

    def to_bytes(self) -> bytes:
        return f"{self.without_proof()},p={b64(self.proof)}".encode()


@dataclass(frozen=True)
class ServerFinal:
    error: str | None
    signature: bytes | None

    def to_bytes(self) -> bytes:
        text = f"e={self.error}" if self.error is not None else f"v={b64(self.signature or b'')}"
        return text.encode()


def _extensions(text: str) -> tuple[tuple[str, str], ...]:
    merged: dict[str, str] = {}  # a repeated key keeps its last value, as Kafka's map does
    for pair in filter(None, text.split(",")):
        key, _, value = pair.partition("=")
        merged[key] = value
    return tuple(merged.items())


def parse_client_first(text: str) -> ClientFirst | None:
    match = _CLIENT_FIRST.fullmatch(text)
    if match is None:
        return None
    return ClientFirst(
        match["name"], match["nonce"], match["authzid"] or "", _extensions(match["extensions"])
    )


def parse_server_first(text: str) -> ServerFirst | None:
    """``None`` also for an iteration count outside Java's int or not above zero."""
    match = _SERVER_FIRST.fullmatch(text)
    digits = match["iterations"].lstrip("0") if match else ""
    if match is None or len(digits) > 10 or not 0 < int(digits or "0") < 2**31:
        return None
    return ServerFirst(match["nonce"], base64.b64decode(match["salt"]), int(digits))


def parse_client_final(text: str) -> ClientFinal | None:
    match = _CLIENT_FINAL.fullmatch(text)
    if match is None:
        return None
    return ClientFinal(base64.b64decode(match["channel"]), match["nonce"], base64.b64decode(match["proof"]))


def parse_server_final(text: str) -> ServerFinal | None:
    match = _SERVER_FINAL.fullmatch(text)
    if match is None:
        return None
    if match["error"] is not None:
        return ServerFinal(match["error"], None)
    return ServerFinal(None, base64.b64decode(match["signature"]))
