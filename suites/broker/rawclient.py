"""The broker suites' raw client: the reference client's raw mode (``kconform.harness.client.raw``).

Tests import it as ``from .rawclient import RawClient``: pytest's importlib mode (8.2 and later) imports
a test module's folders as namespace packages, so a sibling module resolves without ``__init__.py``."""

from kconform.harness.client.raw import Fate, RawClient, Reply, UnexpectedReply

__all__ = ["Fate", "RawClient", "Reply", "UnexpectedReply"]
