"""API handlers: one small module per API family, each registering its functions by API key.

A handler is ``async def handler(broker, request_context, request) -> response | None``: it gets the
decoded request and returns the response body (None only where Kafka sends nothing, acks=0)."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kconform.codecs import api_schema

__all__ = ["Handler", "handles", "registered_handlers"]

HandlerFn = Callable[[Any, Any, Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Handler:
    api_key: int
    fn: HandlerFn
    min_version: int
    max_version: int


_HANDLERS: dict[int, Handler] = {}
_MODULES = (
    "api_versions",
    "metadata",
    "topics",
    "produce",
    "fetch",
    "list_offsets",
    "configs",
    "cluster",
    "records_admin",
    "classic_groups",
    "offsets",
    "kip848_groups",
    "transactions",
    "txn_markers",
    "sasl",
    "scram_credentials",
    "client_quotas",
    "acls",
)


def handles(
    api_key: int,
    *,
    min_version: int | None = None,
    max_version: int | None = None,
    registry: dict[int, Handler] | None = None,
):
    """Register a handler for every version the definitions give, or the sub-range named, in the
    broker's registry or the one given (the controller listener has its own)."""
    lo, hi = api_schema(api_key).valid_versions
    table = _HANDLERS if registry is None else registry

    def register(fn: HandlerFn) -> HandlerFn:
        table[api_key] = Handler(
            api_key,
            fn,
            lo if min_version is None else max(lo, min_version),
            hi if max_version is None else min(hi, max_version),
        )
        return fn

    return register


def registered_handlers() -> dict[int, Handler]:
    for module in _MODULES:
        importlib.import_module(f"{__name__}.{module}")
    return dict(sorted(_HANDLERS.items()))
