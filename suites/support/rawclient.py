"""The raw client the rule suites use: the reference client's raw mode (``kconform.harness.client.raw``).

Tests import it as ``from ..support.rawclient import RawClient``: pytest's importlib mode (8.2 and later)
imports a test module's folders as namespace packages under ``suites``, so helpers here resolve without
``__init__.py`` files."""

from kconform.harness.client.raw import Fate, RawClient, Reply, UnexpectedReply

__all__ = ["Fate", "RawClient", "Reply", "UnexpectedReply"]
