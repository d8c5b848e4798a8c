"""Both sides of TLS for one listener (the client side for our own inter-broker connections), from
Kafka's ``ssl.*`` settings (``DefaultSslEngineFactory``).

Key stores: ``PEM`` (a file holding the private key and certificate chain, or the two given inline as
``ssl.keystore.key`` / ``ssl.keystore.certificate.chain``) and ``PKCS12``. Java's ``JKS`` cannot be
read outside a JVM, so it is refused with a clear message rather than half-supported. Trust stores
likewise (``PEM`` files or ``ssl.truststore.certificates``, or ``PKCS12``). ``ssl.client.auth`` is
``required``, ``requested`` or ``none``, as in Kafka."""

from __future__ import annotations

import os
import ssl
import tempfile
from pathlib import Path

from ..config import ConfigError
from .listener_configs import listener_value

__all__ = ["CLIENT_AUTH", "client_context", "server_context"]

CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


def server_context(config, listener: str) -> ssl.SSLContext:
    """An ``SSLContext`` serving ``listener``, or ConfigError naming the setting that cannot be honoured."""

    def value(name: str) -> str | None:
        raw = listener_value(config, listener, name)
        return raw.strip() if isinstance(raw, str) and raw.strip() else None

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _restrict_protocols(context, value("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3")
    if value("ssl.cipher.suites"):
        raise ConfigError("ssl.cipher.suites: not implemented by the reference broker (Java suite names)")
    _load_key_store(context, value, listener)
    client_auth = (value("ssl.client.auth") or "none").lower()
    if client_auth not in CLIENT_AUTH:
        raise ConfigError(f"Invalid value {client_auth} for configuration ssl.client.auth: "
                          "String must be one of: required, requested, none")  # fmt: skip
    context.verify_mode = CLIENT_AUTH[client_auth]
    if client_auth != "none":
        _load_trust_store(context, value)
    return context


def client_context(config, listener: str) -> ssl.SSLContext:
    """An ``SSLContext`` for dialling another node's ``listener``, from that listener's own settings as
    Kafka's inter-broker clients take them: its trust store (else the system's), its key store when one is
    configured (for ``ssl.client.auth``), and host name checking unless
    ``ssl.endpoint.identification.algorithm`` is empty."""

    def value(name: str) -> str | None:
        raw = listener_value(config, listener, name)
        return raw.strip() if isinstance(raw, str) and raw.strip() else None

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _restrict_protocols(context, value("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3")
    if value("ssl.truststore.location") or value("ssl.truststore.certificates"):
        _load_trust_store(context, value)
    else:
        context.load_default_certs()
    if value("ssl.keystore.location") or value("ssl.keystore.key"):
        _load_key_store(context, value, listener)
    algorithm = listener_value(config, listener, "ssl.endpoint.identification.algorithm")
    context.check_hostname = algorithm is None or bool(str(algorithm).strip())
    return context


def _restrict_protocols(context: ssl.SSLContext, enabled: str) -> None:
    versions = []
    for name in (part.strip() for part in enabled.split(",") if part.strip()):
        if name not in _PROTOCOLS:
            raise ConfigError(f"ssl.enabled.protocols: {name} is not available (TLSv1.2 and TLSv1.3 are)")
        versions.append(_PROTOCOLS[name])
    if not versions:
        raise ConfigError("ssl.enabled.protocols is empty: no TLS version to serve")
    context.minimum_version, context.maximum_version = min(versions), max(versions)


def _load_key_store(context: ssl.SSLContext, value, listener: str) -> None:
    kind = (value("ssl.keystore.type") or "JKS").upper()
    location, password = value("ssl.keystore.location"), value("ssl.keystore.password")
    inline_key, inline_chain = value("ssl.keystore.key"), value("ssl.keystore.certificate.chain")
    if kind == "JKS":
        raise ConfigError(
            f"listener {listener}: ssl.keystore.type=JKS cannot be read by the reference broker; "
            "give the key store as PEM or PKCS12 (ssl.keystore.type)"
        )
    if kind == "PEM":
        key_password = value("ssl.key.password")
        if inline_key or inline_chain:
            if not (inline_key and inline_chain):
                raise ConfigError("ssl.keystore.key and ssl.keystore.certificate.chain go together")
            _load_pem(context, inline_chain + "\n" + inline_key, key_password)
        elif location:
            _load_chain(context, location, None, key_password)
        else:
            raise ConfigError(
                f"listener {listener} uses TLS but no key store is configured (ssl.keystore.location, "
                "or ssl.keystore.key and ssl.keystore.certificate.chain)"
            )
        return
    if kind == "PKCS12":
        if not location:
            raise ConfigError(f"listener {listener}: ssl.keystore.type=PKCS12 needs ssl.keystore.location")
        key, certificate, chain = _read_pkcs12(location, password, "ssl.keystore")
        if key is None or certificate is None:
            raise ConfigError(f"ssl.keystore.location {location} holds no private key and certificate")
        from cryptography.hazmat.primitives import serialization

        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        for cert in [certificate, *chain]:
            pem += cert.public_bytes(serialization.Encoding.PEM).decode()
        _load_pem(context, pem, None)
        return
    raise ConfigError(f"ssl.keystore.type={kind} is not one of JKS, PKCS12, PEM")


def _load_trust_store(context: ssl.SSLContext, value) -> None:
    kind = (value("ssl.truststore.type") or "JKS").upper()
    location, inline = value("ssl.truststore.location"), value("ssl.truststore.certificates")
    if kind == "PEM":
        if inline:
            _verify_locations(context, cadata=inline)
        elif location:
            _verify_locations(context, cafile=location)
        else:
            raise ConfigError("ssl.client.auth needs a trust store (ssl.truststore.location or certificates)")
        return
    if kind == "PKCS12" and location:
        from cryptography.hazmat.primitives import serialization

        _key, certificate, chain = _read_pkcs12(location, value("ssl.truststore.password"), "ssl.truststore")
        certs = [c for c in [certificate, *chain] if c is not None]
        pem = "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)
        _verify_locations(context, cadata=pem)
        return
    raise ConfigError(f"ssl.truststore.type={kind} cannot be read by the reference broker; use PEM or PKCS12")


def _verify_locations(context: ssl.SSLContext, **where) -> None:
    try:
        context.load_verify_locations(**where)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the trust store: {exc}") from None


def _read_pkcs12(location: str, password: str | None, setting: str):
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        data = Path(location).read_bytes()
        return pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except OSError as exc:
        raise ConfigError(f"{setting}.location {location}: {exc.strerror or exc}") from None
    except ValueError as exc:  # wrong password or not PKCS12
        raise ConfigError(f"{setting}.location {location} cannot be read: {exc}") from None


def _load_pem(context: ssl.SSLContext, pem: str, password: str | None) -> None:
    """``load_cert_chain`` reads files only: the PEM goes through a private temporary file."""
    fd, path = tempfile.mkstemp(prefix="kconform-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as file:
            file.write(pem)
        _load_chain(context, path, None, password)
    finally:
        os.unlink(path)


def _load_chain(context: ssl.SSLContext, certfile: str, keyfile: str | None, password: str | None) -> None:
    try:
        context.load_cert_chain(certfile, keyfile, password)
    except OSError as exc:
        raise ConfigError(f"cannot load the key store {certfile}: {exc.strerror or exc}") from None
    except ssl.SSLError as exc:
        raise ConfigError(f"cannot load the key store {certfile}: {exc.reason or exc}") from None
