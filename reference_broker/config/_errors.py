"""How a configuration can be wrong: at start-up (ConfigError) or in an admin request (AdminError)."""

from __future__ import annotations

from dataclasses import dataclass

from kconform.codecs.errors import error_for

__all__ = ["ConfigError", "AdminError"]


class ConfigError(ValueError):
    """A bad configuration: the message names the key, the value and what is allowed.

    With a key, the message is Kafka's own ``ConfigException`` text, for example
    ``Invalid value 12 for configuration log.segment.bytes: Value must be at least 1048576``.
    """

    def __init__(self, name: str | None, value: object = None, reason: str | None = None) -> None:
        self.name = name
        self.value = value
        self.reason = reason
        if name is None:
            message = reason or "invalid configuration"
        else:
            message = f"Invalid value {value} for configuration {name}"
            if reason is not None:
                message += f": {reason}"
        super().__init__(message)

    @classmethod
    def plain(cls, message: str) -> ConfigError:
        """An error that is not about one key's value (Kafka's ``new ConfigException(message)``)."""
        return cls(None, None, message)


@dataclass(frozen=True, slots=True)
class AdminError:
    """The error an admin request gets back for one resource: Kafka's code and message."""

    code: int
    message: str | None

    @property
    def name(self) -> str:
        return error_for(self.code).name

    def __str__(self) -> str:
        return f"{self.name}({self.code}): {self.message}"
