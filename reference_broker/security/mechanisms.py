"""Each SASL mechanism's server, built from its listener's login module options: PLAIN checks the
``user_<name>="<password>"`` options (``PlainServerCallbackHandler``), SCRAM reads the credentials the
cluster metadata holds (AlterUserScramCredentials), OAUTHBEARER validates unsecured tokens with the
``unsecuredValidator*`` options (Kafka's default server callback handler)."""

from __future__ import annotations

from collections.abc import Callable

from kconform.codecs.sasl import (
    MECHANISMS,
    ScramCredential,
    UnsecuredValidatorOptions,
    password_check,
    server_for,
)

from ..config import ConfigError
from .jaas import LoginModule

__all__ = ["IMPLEMENTED_MECHANISMS", "mechanism_server_factory"]

IMPLEMENTED_MECHANISMS = MECHANISMS


def mechanism_server_factory(
    mechanism: str,
    login: LoginModule,
    *,
    scram_credential: Callable[[str, str], object | None],
    now_ms: Callable[[], int],
) -> Callable[[], object]:
    """A maker of fresh servers (one per exchange), or ConfigError for options that cannot work."""
    if mechanism == "PLAIN":
        users = {
            key[len("user_") :]: value for key, value in login.options.items() if key.startswith("user_")
        }
        check = password_check(users)
        return lambda: server_for("PLAIN", check=check)
    if mechanism.startswith("SCRAM-"):

        def credential(user: str) -> ScramCredential | None:
            found = scram_credential(mechanism, user)
            if found is None:
                return None
            return ScramCredential(found.salt, found.stored_key, found.server_key, found.iterations)

        return lambda: server_for(mechanism, credential=credential)
    if mechanism == "OAUTHBEARER":
        try:
            options = UnsecuredValidatorOptions.from_jaas(login.options)
        except ValueError as exc:
            raise ConfigError(f"OAUTHBEARER login module options: {exc}") from None
        return lambda: server_for("OAUTHBEARER", now_ms=now_ms, oauth_options=options)
    raise ConfigError(f"SASL mechanism {mechanism} is not implemented by the reference broker")
