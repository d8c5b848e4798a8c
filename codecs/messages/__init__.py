"""Every Kafka message class by its spec name, e.g. ``from kconform.codecs.messages import ProduceRequest``.

The modules are generated (see ``kconform.codecs.generate``) and imported on first use, so importing
one message does not load all of them."""

from __future__ import annotations

import importlib
from typing import Any

from ._index import MODULE_OF

__all__ = sorted(MODULE_OF)


def __getattr__(name: str) -> Any:
    module = MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no message {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(MODULE_OF))


def message_class(name: str) -> type:
    """The class of a message by its spec name (``"ProduceRequest"``)."""
    return __getattr__(name)
