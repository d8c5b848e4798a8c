"""The SASL mechanisms' exceptions, split the way Kafka's ``SaslServerAuthenticator`` splits them.

Kafka's mechanisms throw two kinds of failure: ``SaslAuthenticationException``, whose text goes to the client
in SaslAuthenticate's ``error_message``, and a plain ``SaslException``, whose text stays in the broker's log
while the client gets a generic sentence (so a reply never tells whether a user exists). Both end as
SASL_AUTHENTICATION_FAILED, so both are one class here; ``hidden`` says which kind it was. A message in the
wrong state is Kafka's ``IllegalSaslStateException`` (ILLEGAL_SASL_STATE)."""

from __future__ import annotations

__all__ = [
    "SaslAuthenticationError",
    "SaslError",
    "SaslIllegalStateError",
    "UnsupportedSaslMechanismError",
]


class SaslError(Exception):
    """Base of every error the SASL mechanisms raise."""


class SaslAuthenticationError(SaslError):
    """Authentication failed. ``message`` is what Kafka puts in SaslAuthenticate's ``error_message``;
    ``reason`` is the detail for the log (the same text unless Kafka hides it)."""

    def __init__(self, message: str, *, reason: str | None = None, hidden_for: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = message if reason is None else reason
        self.hidden_for = hidden_for  # the mechanism, when Kafka hides the reason behind its generic text

    @classmethod
    def hiding(cls, mechanism: str, reason: str) -> SaslAuthenticationError:
        """A failure Kafka raises as a plain ``SaslException``: the client sees only the generic text."""
        return cls(_generic_message(mechanism, reauthenticating=False), reason=reason, hidden_for=mechanism)

    @property
    def hidden(self) -> bool:
        return self.hidden_for is not None

    def error_message(self, *, reauthenticating: bool = False) -> str:
        """The client's text; Kafka's generic one names the step (authentication or re-authentication)."""
        if self.hidden_for is None:
            return self.message
        return _generic_message(self.hidden_for, reauthenticating=reauthenticating)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, reason={self.reason!r}, hidden_for={self.hidden_for!r})"
        )


class SaslIllegalStateError(SaslError):
    """A token that the exchange's state does not allow (sent after completion or after a failure)."""


class UnsupportedSaslMechanismError(SaslError, ValueError):
    """A mechanism name outside ``MECHANISMS``."""


def _generic_message(mechanism: str, *, reauthenticating: bool) -> str:
    step = "re-authentication" if reauthenticating else "authentication"
    return f"Authentication failed during {step} due to invalid credentials with SASL mechanism {mechanism}"
