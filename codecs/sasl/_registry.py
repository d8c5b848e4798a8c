"""The mechanisms by name, and one factory per side that builds any of them from what it needs."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ._errors import UnsupportedSaslMechanismError
from ._interface import SaslClient, SaslServer
from ._scram_formatter import SCRAM_MECHANISMS, ScramCredential, random_nonce
from .oauthbearer import OAUTHBEARER, OAuthBearerClient, OAuthBearerServer, UnsecuredValidatorOptions
from .plain import PLAIN, PlainClient, PlainServer
from .scram import DelegationTokenCredential, ScramClient, ScramServer

__all__ = ["MECHANISMS", "client_for", "server_for"]

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def _needs(mechanism: str, name: str, value: object) -> None:
    if value is None:
        raise ValueError(f"a {mechanism} server needs {name}=")


def _known(mechanism: str) -> None:
    if mechanism not in MECHANISMS:
        raise UnsupportedSaslMechanismError(f"Unsupported SASL mechanism {mechanism!r}; known: {MECHANISMS}")


def server_for(
    mechanism: str,
    *,
    check: Callable[[str, str], bool] | None = None,
    credential: Callable[[str], ScramCredential | None] | None = None,
    token_credential: Callable[[str], DelegationTokenCredential | None] | None = None,
    now_ms: Callable[[], int] | None = None,
    oauth_options: UnsecuredValidatorOptions | None = None,
    nonce: Callable[[], str] = random_nonce,
) -> SaslServer:
    """PLAIN takes ``check``; SCRAM takes ``credential`` (and ``token_credential``, ``nonce``);
    OAUTHBEARER takes ``now_ms`` (and ``oauth_options``)."""
    _known(mechanism)
    if mechanism == PLAIN:
        _needs(mechanism, "check", check)
        return PlainServer(check)  # type: ignore[arg-type]
    if mechanism in SCRAM_MECHANISMS:
        _needs(mechanism, "credential", credential)
        return ScramServer(mechanism, credential, token_credential=token_credential, nonce=nonce)  # type: ignore[arg-type]
    _needs(mechanism, "now_ms", now_ms)
    return OAuthBearerServer(now_ms, oauth_options)  # type: ignore[arg-type]


def client_for(
    mechanism: str,
    *,
    username: str | None = None,
    password: str | None = None,
    token: str | None = None,
    authorization_id: str = "",
    extensions: Mapping[str, str] | None = None,
    nonce: Callable[[], str] = random_nonce,
) -> SaslClient:
    """PLAIN and SCRAM take ``username`` and ``password``; OAUTHBEARER takes a ``token``
    (``unsecured_token(...)`` makes Kafka's unsecured kind)."""
    _known(mechanism)
    if mechanism == OAUTHBEARER:
        if token is None:
            raise ValueError("an OAUTHBEARER client needs token=")
        return OAuthBearerClient(token, authorization_id=authorization_id, extensions=extensions)
    if username is None or password is None:
        raise ValueError(f"a {mechanism} client needs username= and password=")
    if mechanism == PLAIN:
        return PlainClient(username, password, authorization_id)
    return ScramClient(mechanism, username, password, extensions=dict(extensions or {}), nonce=nonce)
