"""The error a group rule raises to answer a request with one of Kafka's error codes."""

from __future__ import annotations

__all__ = ["GroupError"]


class GroupError(Exception):
    """A request-level failure with Kafka's error code."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or str(code))
        self.code = code
