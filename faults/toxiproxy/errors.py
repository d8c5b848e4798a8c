"""Toxiproxy's API errors, word for word (Shopify/toxiproxy api.go, the ``var`` block of ``Err...``
values and ``joinError``), and how its ``apiError`` answers them: ``http.Error`` with the JSON
``{"error": message, "status": code}`` and that status; any other Go error (a failed listen, an
unresolvable address) becomes status 500 with the error's own text."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BAD_REQUEST_BODY",
    "INVALID_STREAM",
    "INVALID_TOXIC_TYPE",
    "MISSING_FIELD",
    "PROXY_ALREADY_EXISTS",
    "PROXY_NOT_FOUND",
    "TOXIC_ALREADY_EXISTS",
    "TOXIC_NOT_FOUND",
    "ApiError",
    "Sentinel",
    "internal_error",
]


class ApiError(Exception):
    """An API failure with Toxiproxy's message and HTTP status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True, slots=True)
class Sentinel:
    """One of api.go's ``Err...`` values; ``error()`` raises it, ``join(detail)`` is ``joinError``."""

    message: str
    status: int

    def error(self) -> ApiError:
        return ApiError(self.message, self.status)

    def join(self, detail: str) -> ApiError:
        return ApiError(f"{self.message}: {detail}", self.status)


BAD_REQUEST_BODY = Sentinel("bad request body", 400)  # ErrBadRequestBody
MISSING_FIELD = Sentinel("missing required field", 400)  # ErrMissingField
PROXY_NOT_FOUND = Sentinel("proxy not found", 404)  # ErrProxyNotFound
PROXY_ALREADY_EXISTS = Sentinel("proxy already exists", 409)  # ErrProxyAlreadyExists
INVALID_STREAM = Sentinel("stream was invalid, can be either upstream or downstream", 400)  # ErrInvalidStream
INVALID_TOXIC_TYPE = Sentinel("invalid toxic type", 400)  # ErrInvalidToxicType
TOXIC_ALREADY_EXISTS = Sentinel("toxic already exists", 409)  # ErrToxicAlreadyExists
TOXIC_NOT_FOUND = Sentinel("toxic not found", 404)  # ErrToxicNotFound


def internal_error(message: str) -> ApiError:
    """A Go error that is not an ``*ApiError``: ``apiError`` answers it with 500 and its text."""
    return ApiError(message, 500)
