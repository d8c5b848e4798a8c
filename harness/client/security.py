"""A client's security from the Java client's properties: TLS context and SASL credentials.

``security_from_config(config)`` reads ``security.protocol``, the ``ssl.*`` settings (PEM or PKCS12
stores, inline PEM, host name checking) and ``sasl.mechanism`` with ``sasl.jaas.config`` (the login
module's options, as Kafka's ``JaasContext`` reads them) into a ``ClientSecurity``. A bad store or JAAS
text is a ClientConfigError that names the setting.

Connections to a secured target are made in many places from a bootstrap string alone, so the harness
registers a target's addresses here (``register_addresses``) and ``security_for_address`` hands their
security to any connection opened to them; a connection given a security explicitly ignores the
registry."""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .config import ClientConfigError

__all__ = [
    "ClientSecurity",
    "PLAINTEXT",
    "SaslCredentials",
    "register_addresses",
    "security_for_address",
    "security_from_config",
    "unregister_addresses",
]

_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


@dataclass(frozen=True)
class SaslCredentials:
    """What one SASL login offers: ``username``/``password`` (PLAIN, SCRAM) or the options of Kafka's
    unsecured OAUTHBEARER login (``unsecuredLoginStringClaim_sub`` ...), from which a fresh token is made
    at each (re-)authentication."""

    mechanism: str
    username: str | None = None
    password: str | None = None
    oauth_options: tuple[tuple[str, str], ...] = ()

    def client(self, now_ms: int):
        from kconform.codecs.sasl import client_for, unsecured_token

        if self.mechanism != "OAUTHBEARER":
            return client_for(self.mechanism, username=self.username, password=self.password)
        options = dict(self.oauth_options)
        # OAuthBearerUnsecuredLoginCallbackHandler: the principal claim name and its value, the lifetime
        claim = options.get("unsecuredLoginPrincipalClaimName", "sub")
        principal = options.get(f"unsecuredLoginStringClaim_{claim}")
        scope_claim = options.get("unsecuredLoginScopeClaimName", "scope")
        scope = options.get(f"unsecuredLoginListClaim_{scope_claim}")
        token = unsecured_token(
            principal or "",
            now_ms=now_ms,
            lifetime_seconds=int(options.get("unsecuredLoginLifetimeSeconds", "3600")),
            scope=tuple(s for s in scope[1:].split(scope[0]) if s) if scope else None,
            principal_claim=claim,
            scope_claim=scope_claim,
        )
        return client_for("OAUTHBEARER", token=token)

    def __repr__(self) -> str:  # never print a password
        return f"SaslCredentials(mechanism={self.mechanism!r}, username={self.username!r})"


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslCredentials | None = None


PLAINTEXT = ClientSecurity()

_registry: dict[tuple[str, int], ClientSecurity] = {}


def register_addresses(addresses: Iterable[tuple[str, int]], security: ClientSecurity) -> None:
    for address in addresses:
        _registry[address] = security


def unregister_addresses(addresses: Iterable[tuple[str, int]]) -> None:
    for address in addresses:
        _registry.pop(address, None)


def security_for_address(host: str, port: int) -> ClientSecurity:
    return _registry.get((host, port), PLAINTEXT)


def security_from_config(config: Mapping) -> ClientSecurity:
    """The security a checked client config (``AdminConfig`` and the like) asks for."""
    protocol = config["security.protocol"].upper()
    context = _ssl_context(config) if protocol in ("SSL", "SASL_SSL") else None
    sasl = _sasl_credentials(config) if protocol.startswith("SASL_") else None
    return ClientSecurity(protocol, context, sasl)


# ---- TLS ----------------------------------------------------------------------------------------


def _ssl_context(config: Mapping) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    # "https" (the default since Kafka 2.0) checks the broker's name; "" turns the check off only
    context.check_hostname = config["ssl.endpoint.identification.algorithm"].lower() == "https"
    if config["ssl.truststore.certificates"]:
        _load_trust(context, "ssl.truststore.certificates", cadata=config["ssl.truststore.certificates"])
    elif config["ssl.truststore.location"]:
        _load_truststore(context, config)
    chain, key = config["ssl.keystore.certificate.chain"], config["ssl.keystore.key"]
    if chain or key:
        if not (chain and key):
            raise ClientConfigError("ssl.keystore.certificate.chain and ssl.keystore.key go together")
        _load_identity(context, "ssl.keystore.key", key.encode() + b"\n" + chain.encode(), config)
    elif config["ssl.keystore.location"]:
        _load_keystore(context, config)
    return context


def _read(config: Mapping, name: str) -> bytes:
    try:
        return Path(config[name]).read_bytes()
    except OSError as exc:
        raise ClientConfigError(f"{name}: cannot read {config[name]}: {exc.strerror or exc}") from None


def _load_trust(context: ssl.SSLContext, name: str, **where) -> None:
    try:
        context.load_verify_locations(**where)
    except (ssl.SSLError, ValueError) as exc:
        raise ClientConfigError(f"{name}: no usable CA certificate ({exc})") from None


def _load_truststore(context: ssl.SSLContext, config: Mapping) -> None:
    kind = config["ssl.truststore.type"].upper()
    if kind != "PEM":
        _needs_pkcs12("ssl.truststore.type", kind)
    data = _read(config, "ssl.truststore.location")
    if kind == "PEM":
        _load_trust(context, "ssl.truststore.location", cadata=data.decode("ascii", "replace"))
        return
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

    password = config["ssl.truststore.password"]
    try:
        store = pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError as exc:
        raise ClientConfigError(f"ssl.truststore.location: not a readable PKCS12 store ({exc})") from None
    certs = [c.certificate for c in store.additional_certs] + ([store.cert.certificate] if store.cert else [])
    if not certs:
        raise ClientConfigError("ssl.truststore.location: the PKCS12 store holds no certificate")
    pem = "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)
    _load_trust(context, "ssl.truststore.location", cadata=pem)


def _load_keystore(context: ssl.SSLContext, config: Mapping) -> None:
    kind = config["ssl.keystore.type"].upper()
    if kind != "PEM":
        _needs_pkcs12("ssl.keystore.type", kind)
    data = _read(config, "ssl.keystore.location")
    if kind == "PEM":
        _load_identity(context, "ssl.keystore.location", data, config)
        return
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, pkcs12

    password = config["ssl.keystore.password"]
    try:
        key, cert, chain = pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError as exc:
        raise ClientConfigError(f"ssl.keystore.location: not a readable PKCS12 store ({exc})") from None
    if key is None or cert is None:
        raise ClientConfigError("ssl.keystore.location: the PKCS12 store holds no key and certificate")
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    pem += b"".join(c.public_bytes(Encoding.PEM) for c in [cert, *chain])
    _load_identity(context, "ssl.keystore.location", pem, {**config, "ssl.key.password": None})


def _load_identity(context: ssl.SSLContext, name: str, pem: bytes, config: Mapping) -> None:
    # ssl loads a certificate chain from a file only: a private temporary one, removed at once
    handle, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(pem)
        context.load_cert_chain(path, password=config["ssl.key.password"] or None)
    except ssl.SSLError as exc:
        raise ClientConfigError(f"{name}: no usable key and certificate ({exc.reason or exc})") from None
    finally:
        os.unlink(path)


def _needs_pkcs12(name: str, kind: str) -> None:
    if kind != "PKCS12":
        raise ClientConfigError(f"{name}={kind} is not supported here: use PEM or PKCS12")


# ---- SASL ---------------------------------------------------------------------------------------


def _sasl_credentials(config: Mapping) -> SaslCredentials:
    from kconform.codecs.sasl import MECHANISMS
    from kconform.reference_broker.config import ConfigError
    from kconform.reference_broker.security.jaas import parse_jaas_config

    mechanism = config["sasl.mechanism"].upper()
    if mechanism not in MECHANISMS:
        raise ClientConfigError(
            f"sasl.mechanism={mechanism} is not supported here: use {', '.join(MECHANISMS)}"
        )
    text = config["sasl.jaas.config"]
    if not text:
        raise ClientConfigError(f"security.protocol={config['security.protocol']} needs sasl.jaas.config")
    try:
        modules = parse_jaas_config(text)
    except ConfigError as exc:
        raise ClientConfigError(f"sasl.jaas.config: {exc}") from None
    if len(modules) != 1:
        raise ClientConfigError(f"sasl.jaas.config holds {len(modules)} login modules; a client takes 1")
    module = modules[0]
    wanted = (
        _OAUTH_MODULE
        if mechanism == "OAUTHBEARER"
        else _PLAIN_MODULE
        if mechanism == "PLAIN"
        else _SCRAM_MODULE
    )
    if module.class_name != wanted:
        raise ClientConfigError(f"sasl.jaas.config: sasl.mechanism={mechanism} needs {wanted}")
    options = module.options
    if mechanism == "OAUTHBEARER":
        claim = options.get("unsecuredLoginPrincipalClaimName", "sub")
        if not options.get(f"unsecuredLoginStringClaim_{claim}"):
            raise ClientConfigError(f"sasl.jaas.config: {wanted} needs unsecuredLoginStringClaim_{claim}")
        if not options.get("unsecuredLoginLifetimeSeconds", "1").isdigit():
            raise ClientConfigError("sasl.jaas.config: unsecuredLoginLifetimeSeconds must be a whole number")
        return SaslCredentials(mechanism, oauth_options=tuple(sorted(options.items())))
    if "username" not in options or "password" not in options:
        raise ClientConfigError(f"sasl.jaas.config: {wanted} needs username and password")
    return SaslCredentials(mechanism, options["username"], options["password"])
