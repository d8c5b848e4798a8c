"""How this node dials another over a secured listener (Kafka's inter-broker client channel): TLS
from the listener's own ``ssl.*`` settings, and SASL with ``sasl.mechanism.inter.broker.protocol``,
logging in with the ``username``/``password`` (PLAIN, SCRAM) of that mechanism's JAAS entry on the
listener, as Kafka's broker reads its client credentials from ``listener.name.<l>.<mech>.sasl.jaas.config``.
OAUTHBEARER logs in with an unsecured token for ``unsecuredLoginStringClaim_sub``."""

from __future__ import annotations

import ssl
import time
from dataclasses import dataclass

from kconform.codecs.sasl import unsecured_token

from ..config import ConfigError
from .jaas import server_login_module
from .listeners import Listener
from .mechanisms import IMPLEMENTED_MECHANISMS
from .tls import client_context

__all__ = ["PeerSecurity", "controller_listener", "peer_security"]

OAUTHBEARER = "OAUTHBEARER"


@dataclass(frozen=True)
class PeerSecurity:
    """What an inter-broker connection needs besides the address: a TLS context, and SASL login."""

    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    token_subject: str | None = None  # OAUTHBEARER: a fresh unsecured token for each login

    def sasl_options(self, now_ms: int | None = None) -> dict[str, str]:
        if self.mechanism == OAUTHBEARER:
            now = int(time.time() * 1000) if now_ms is None else now_ms
            return {"token": unsecured_token(self.token_subject or "", now_ms=now)}
        return {"username": self.username or "", "password": self.password or ""}


def controller_listener(config) -> Listener:
    """The listener controllers serve (the first of ``controller.listener.names``) with its protocol:
    mapped in ``listener.security.protocol.map``, else PLAINTEXT (Kafka maps an unmapped controller
    listener name to PLAINTEXT)."""
    from .listeners import parse_protocol_map

    names = config["controller.listener.names"] or "CONTROLLER"
    name = next((n.strip().upper() for n in str(names).split(",") if n.strip()), "CONTROLLER")
    protocol = parse_protocol_map(config["listener.security.protocol.map"] or "").get(name, "PLAINTEXT")
    return Listener(name, "", 0, protocol)


def peer_security(
    config, listener: Listener, mechanism: str, setting: str = "sasl.mechanism.inter.broker.protocol"
) -> PeerSecurity | None:
    """None for a PLAINTEXT listener; else its client side, or ConfigError naming what is missing
    (``setting`` names where ``mechanism`` came from)."""
    if not (listener.uses_tls or listener.uses_sasl):
        return None
    context = client_context(config, listener.name) if listener.uses_tls else None
    if not listener.uses_sasl:
        return PeerSecurity(context)
    if mechanism not in IMPLEMENTED_MECHANISMS:
        raise ConfigError(
            f"{setting}={mechanism}: the reference broker logs in with "
            f"{', '.join(IMPLEMENTED_MECHANISMS)} (GSSAPI is Kafka's default; set one of these)"
        )
    options = server_login_module(config, listener.name, mechanism).options
    if mechanism == OAUTHBEARER:
        subject = options.get("unsecuredLoginStringClaim_sub")
        if not subject:
            raise ConfigError(
                f"listener {listener.name}: the OAUTHBEARER JAAS entry needs unsecuredLoginStringClaim_sub "
                "for this broker's own login"
            )
        return PeerSecurity(context, mechanism, token_subject=subject)
    username, password = options.get("username"), options.get("password")
    if not username or password is None:
        raise ConfigError(
            f"listener {listener.name}: the {mechanism} JAAS entry needs username and password options "
            "for this broker's own login to other brokers"
        )
    return PeerSecurity(context, mechanism, username, password)
