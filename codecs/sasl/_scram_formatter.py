"""SCRAM's arithmetic and names (RFC 5802, RFC 7677) as Kafka's ``ScramMechanism``, ``ScramFormatter`` and
``ScramCredentialUtils`` have them: the two mechanisms, stored credentials, key derivation, saslname escaping
and nonces."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "SCRAM_MECHANISMS",
    "SCRAM_SHA_256",
    "SCRAM_SHA_512",
    "ScramCredential",
    "ScramMechanism",
    "credential_from_string",
    "credential_to_string",
    "derive_credential",
    "random_nonce",
    "salted_password",
    "sasl_name",
    "username_of",
]


@dataclass(frozen=True)
class ScramMechanism:
    """One row of Kafka's ``ScramMechanism`` enum; ``kafka_name`` is the enum constant Kafka's messages
    print (``SCRAM_SHA_256``), ``type_id`` the id UserScramCredentialRecord carries."""

    name: str
    kafka_name: str
    type_id: int
    hash_name: str
    min_iterations: int = 4096
    max_iterations: int = 16384

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", "SCRAM_SHA_256", 1, "sha256")
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", "SCRAM_SHA_512", 2, "sha512")
SCRAM_MECHANISMS = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}


@dataclass(frozen=True)
class ScramCredential:
    """What a server keeps of a password (Kafka's ``ScramCredential``); secrets stay out of the repr."""

    salt: bytes = field(repr=False)
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i) of RFC 5802: PBKDF2 with the mechanism's HMAC and one output block."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


def derive_credential(
    mechanism: ScramMechanism, password: str, *, salt: bytes | None = None, iterations: int | None = None
) -> ScramCredential:
    """A credential as Kafka's ``ScramFormatter.generateCredential`` makes one. Kafka's salt is the UTF-8
    of a random base-36 string; pass ``salt`` for a fixed one."""
    rounds = mechanism.min_iterations if iterations is None else iterations
    salt = random_nonce().encode() if salt is None else salt
    salted = salted_password(mechanism, password, salt, rounds)
    client_key = mechanism.hmac(salted, b"Client Key")
    return ScramCredential(salt, mechanism.hash(client_key), mechanism.hmac(salted, b"Server Key"), rounds)


def sasl_name(username: str) -> str:
    """RFC 5802 saslname: ``=`` becomes ``=3D`` and ``,`` becomes ``=2C``."""
    return username.replace("=", "=3D").replace(",", "=2C")


def username_of(name: str) -> str:
    """The inverse of ``sasl_name``; any other ``=`` is invalid (``ScramFormatter.username``)."""
    commas = name.replace("=2C", ",")
    if "=" in commas.replace("=3D", ""):
        raise ValueError(f"Invalid username: {name}")
    return commas.replace("=3D", "=")


def random_nonce(random_bytes: Callable[[int], bytes] = secrets.token_bytes) -> str:
    """Kafka's nonce: a random 130-bit number written in base 36. ``random_bytes(n)`` is the source,
    so a test can pass a seeded one."""
    value = int.from_bytes(random_bytes(17), "big") & ((1 << 130) - 1)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        value, digit = divmod(value, 36)
        text = digits[digit] + text
        if value == 0:
            return text


def credential_to_string(credential: ScramCredential) -> str:
    """``salt=...,stored_key=...,server_key=...,iterations=N`` (``ScramCredentialUtils``)."""

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return (
        f"salt={b64(credential.salt)},stored_key={b64(credential.stored_key)},"
        f"server_key={b64(credential.server_key)},iterations={credential.iterations}"
    )


def credential_from_string(text: str) -> ScramCredential:
    properties = {}
    for token in text.split(","):
        key, equals, value = token.partition("=")
        if not equals or not key:
            raise ValueError(f"Credentials not valid: {text}")
        properties[key] = value
    if set(properties) != {"salt", "stored_key", "server_key", "iterations"}:
        raise ValueError(f"Credentials not valid: {text}")
    try:
        return ScramCredential(
            base64.b64decode(properties["salt"], validate=True),
            base64.b64decode(properties["stored_key"], validate=True),
            base64.b64decode(properties["server_key"], validate=True),
            int(properties["iterations"]),
        )
    except (binascii.Error, ValueError) as error:
        raise ValueError(f"Credentials not valid: {text}") from error
