"""kconform's embedded Toxiproxy-compatible server (HTTP API, proxies, toxics) and the choice between
it and a real Toxiproxy."""

from .control import ToxiproxyHandle, open_toxiproxy
from .server import EmbeddedToxiproxy

__all__ = ["EmbeddedToxiproxy", "ToxiproxyHandle", "open_toxiproxy"]
