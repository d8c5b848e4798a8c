"""kconform.codecs.sasl: the SASL mechanisms Kafka brokers offer, both sides, as sans-I/O objects.

A server takes SaslAuthenticate ``auth_bytes`` and returns the reply's; a client makes them. No sockets,
no clock of their own (OAUTHBEARER's server is handed one), no randomness that a test cannot replace.
The broker's per-connection authenticator and the harness's client drive them."""

from ._errors import SaslAuthenticationError, SaslError, SaslIllegalStateError, UnsupportedSaslMechanismError
from ._interface import SaslClient, SaslServer, session_lifetime_ms
from ._registry import MECHANISMS, client_for, server_for
from ._scram_formatter import (
    SCRAM_MECHANISMS,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramCredential,
    ScramMechanism,
    credential_from_string,
    credential_to_string,
    derive_credential,
    random_nonce,
    sasl_name,
    username_of,
)
from ._unsecured_jws import unsecured_token
from .oauthbearer import OAuthBearerClient, OAuthBearerServer, UnsecuredValidatorOptions
from .plain import PlainClient, PlainServer, password_check
from .scram import DelegationTokenCredential, ScramClient, ScramServer

__all__ = [
    "DelegationTokenCredential",
    "MECHANISMS",
    "OAuthBearerClient",
    "OAuthBearerServer",
    "PlainClient",
    "PlainServer",
    "SCRAM_MECHANISMS",
    "SCRAM_SHA_256",
    "SCRAM_SHA_512",
    "SaslAuthenticationError",
    "SaslClient",
    "SaslError",
    "SaslIllegalStateError",
    "SaslServer",
    "ScramClient",
    "ScramCredential",
    "ScramMechanism",
    "ScramServer",
    "UnsecuredValidatorOptions",
    "UnsupportedSaslMechanismError",
    "client_for",
    "credential_from_string",
    "credential_to_string",
    "derive_credential",
    "password_check",
    "random_nonce",
    "sasl_name",
    "server_for",
    "session_lifetime_ms",
    "unsecured_token",
    "username_of",
]
