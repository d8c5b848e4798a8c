"""What a listener needs to secure its connections, built from the broker's settings: TLS for SSL and
SASL_SSL, and for SASL listeners the enabled mechanisms, each with its login module's options
(``listener.name.<listener>.<mechanism>.sasl.jaas.config``) and re-authentication limit."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass

from ..config import ConfigError
from .authenticator import SaslAuthenticator
from .jaas import server_login_module
from .listener_configs import listener_value
from .listeners import Listener
from .mechanisms import IMPLEMENTED_MECHANISMS, mechanism_server_factory
from .principals import SslPrincipalMapper
from .tls import server_context

__all__ = ["ListenerSecurity", "listener_security"]


@dataclass(frozen=True)
class ListenerSecurity:
    """How one listener secures its connections: TLS (``ssl_context``, with certificate principals
    mapped by ``principal_mapper``) and/or SASL (``new_authenticator`` makes one per connection)."""

    name: str = "PLAINTEXT"
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: SslPrincipalMapper | None = None
    new_authenticator: Callable[[], SaslAuthenticator] | None = None


def listener_security(
    config,
    listener: Listener,
    *,
    scram_credential: Callable[[str, str], object | None],
    now_ms: Callable[[], int],
    serves: Callable[[int, int], bool],
) -> ListenerSecurity:
    """The security of ``listener``, or ConfigError naming what cannot be honoured. ``scram_credential
    (mechanism, user)`` reads the SCRAM credentials the cluster metadata holds."""
    context = mapper = new_authenticator = None
    if listener.uses_tls:
        context = server_context(config, listener.name)
        mapper = SslPrincipalMapper(listener_value(config, listener.name, "ssl.principal.mapping.rules"))
    if listener.uses_sasl:
        mechanisms = _enabled_mechanisms(config, listener.name)
        factories = {
            mechanism: mechanism_server_factory(
                mechanism,
                server_login_module(config, listener.name, mechanism),
                scram_credential=scram_credential,
                now_ms=now_ms,
            )
            for mechanism in mechanisms
        }
        reauth = {mechanism: _reauth_ms(config, listener.name, mechanism) for mechanism in mechanisms}
        delay = listener_value(config, listener.name, "connection.failed.authentication.delay.ms")
        failed_delay = int(delay or 100)

        def new_authenticator() -> SaslAuthenticator:
            return SaslAuthenticator(
                mechanisms,
                lambda mechanism: factories[mechanism](),
                reauth_ms=reauth.__getitem__,
                serves=serves,
                failed_delay_ms=failed_delay,
            )

    return ListenerSecurity(listener.name, listener.security_protocol, context, mapper, new_authenticator)


def _enabled_mechanisms(config, listener: str) -> list[str]:
    raw = listener_value(config, listener, "sasl.enabled.mechanisms") or "GSSAPI"
    mechanisms = [m.strip() for m in raw.split(",") if m.strip()]
    if not mechanisms:
        raise ConfigError(
            f"listener {listener}: sasl.enabled.mechanisms is empty (no SASL mechanism enabled)"
        )
    missing = [m for m in mechanisms if m not in IMPLEMENTED_MECHANISMS]
    if missing:
        raise ConfigError(
            f"listener {listener}: sasl.enabled.mechanisms={raw}: {', '.join(missing)} not implemented by "
            f"the reference broker (it offers {', '.join(IMPLEMENTED_MECHANISMS)}); GSSAPI is Kafka's default"
        )
    return mechanisms


def _reauth_ms(config, listener: str, mechanism: str) -> int:
    raw = listener_value(config, listener, "connections.max.reauth.ms", mechanism=mechanism)
    try:
        return int(raw or 0)
    except ValueError:
        raise ConfigError(f"connections.max.reauth.ms={raw} is not a number") from None
