"""The reference client's exceptions. A broker's error code becomes ``BrokerError`` carrying the codec's
entry for it (name, retriable, invalid-metadata), so callers decide on the same flags Kafka's clients do."""

from __future__ import annotations

from kconform.codecs.errors import KafkaError, error_for

__all__ = [
    "BrokerError",
    "ClientError",
    "ConnectionLost",
    "DeliveryTimedOut",
    "NoCommonVersion",
    "RequestTimedOut",
    "raise_for",
]


class ClientError(Exception):
    """Anything the reference client reports. ``retriable`` says whether trying again can help."""

    retriable = False


class BrokerError(ClientError):
    """The broker answered with an error code."""

    def __init__(self, code: int | KafkaError, context: str = "", message: str | None = None) -> None:
        self.error = code if isinstance(code, KafkaError) else error_for(code)
        self.context = context
        self.broker_message = message
        text = self.error.name + (f" ({context})" if context else "") + (f": {message}" if message else "")
        super().__init__(text)

    @property
    def code(self) -> int:
        return self.error.code

    @property
    def name(self) -> str:
        return self.error.name

    @property
    def retriable(self) -> bool:  # type: ignore[override]
        return self.error.retriable

    @property
    def invalid_metadata(self) -> bool:
        return self.error.invalid_metadata


class ConnectionLost(ClientError):
    """The connection closed (or could not be opened) before the answer came: Java's NetworkException."""

    retriable = True


class RequestTimedOut(ClientError):
    """No answer within request.timeout.ms; the connection is closed, as Java's NetworkClient does."""

    retriable = True


class DeliveryTimedOut(ClientError):
    """A record was not acknowledged within delivery.timeout.ms."""


class NoCommonVersion(ClientError):
    """The broker offers no version of an API that the codecs (or the caller's cap) can use."""


def raise_for(code: int, context: str = "", message: str | None = None) -> None:
    if code:
        raise BrokerError(code, context, message)
