"""Proxies and their toxics, in Toxiproxy's model: a proxy listens, connects each client to its
upstream, and pipes through the toxics; toxics are named per proxy (default ``<type>_<stream>``), and
adding or removing one reaches the connections already open. Each rule below names the Go function
of Shopify/toxiproxy it follows."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any

from . import gojson
from .addresses import listen_socket, resolved_string, split_host_port
from .errors import INVALID_STREAM, INVALID_TOXIC_TYPE, TOXIC_ALREADY_EXISTS, TOXIC_NOT_FOUND, ApiError
from .link import Connection
from .toxics import ATTRIBUTES

__all__ = ["ApiError", "Proxy", "Toxic", "parse_toxic"]

_DIRECTIONS = ("upstream", "downstream")  # stream.Direction order: the toxic lists follow it


@dataclass
class Toxic:
    name: str
    type: str
    stream: str  # as the client spelled it (``ParseDirection`` ignores case, the JSON keeps it)
    toxicity: float
    attributes: dict[str, int] = field(default_factory=dict)

    @property
    def direction(self) -> str:
        return self.stream.lower()

    def to_json(self) -> dict[str, Any]:
        # toxics/toxic.go ToxicWrapper: the toxic's struct is "attributes"
        return {
            "attributes": dict(self.attributes),
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": self.toxicity,
        }


def _attributes(kind: str, given: Any, current: dict[str, int]) -> dict[str, int]:
    """The toxic's struct after decoding ``attributes`` into it: fields not given keep their value."""
    fields = gojson.struct_fields(given, f"toxics.{kind}")
    return {key: gojson.go_int(fields, key, value, f".attributes.{key}") for key, value in current.items()}


def parse_toxic(body: Any, existing: dict[str, Toxic]) -> Toxic:
    """A new toxic from a create request, checked in the order of toxic_collection.go AddToxicJson:
    the body decodes into a ToxicWrapper, its attributes into a NoopToxic (400); the stream parses,
    case-insensitively (stream.ParseDirection; 400); the name defaults to ``<type>_<stream>``; the
    type is registered (toxics.New; 400); the name is free (409); then the attributes decode into
    the type's struct (400)."""
    fields = gojson.struct_fields(body, "toxics.ToxicWrapper")
    name = gojson.go_string(fields, "name", "", "ToxicWrapper.name")
    kind = gojson.go_string(fields, "type", "", "ToxicWrapper.type")
    stream = gojson.go_string(fields, "stream", "downstream", "ToxicWrapper.stream")
    toxicity = gojson.go_float32(fields, "toxicity", 1.0, "ToxicWrapper.toxicity")
    gojson.struct_fields(gojson.go_value(fields, "attributes"), "toxics.NoopToxic")  # first decode: an object
    if stream.lower() not in _DIRECTIONS:
        raise INVALID_STREAM.error()
    name = name or f"{kind}_{stream}"
    if kind not in ATTRIBUTES:
        raise INVALID_TOXIC_TYPE.error()
    if name in existing:
        raise TOXIC_ALREADY_EXISTS.error()
    attributes = _attributes(kind, gojson.go_value(fields, "attributes"), ATTRIBUTES[kind])
    return Toxic(name, kind, stream, toxicity, attributes)


class Proxy:
    def __init__(self, name: str, listen: str, upstream: str) -> None:
        self.name = name
        self.listen = listen  # as given until the proxy listens, then the address it listens on
        self.upstream = upstream
        self.enabled = False
        self.toxics: dict[str, Toxic] = {}
        self.connections: set[Connection] = set()
        self._server: asyncio.base_events.Server | None = None
        self.rng = random.Random()

    def to_json(self) -> dict[str, Any]:
        # api.go proxyWithToxics: the Proxy struct's JSON fields and its toxics. (Toxiproxy also
        # writes its exported ``Logger`` field, as ``{}``; no client reads it, so it is left out.)
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            "toxics": self.toxic_list(),
        }

    def toxic_list(self) -> list[dict[str, Any]]:
        """toxic_collection.go GetToxicArray: the upstream chain, then the downstream one, each in
        the order its toxics were added."""
        return [t.to_json() for d in _DIRECTIONS for t in self.toxics.values() if t.direction == d]

    def differs(self, listen: str, upstream: str) -> bool:
        """proxy.go Proxy.Differs: the new listen address, resolved, or the upstream is another."""
        return self.listen != resolved_string(listen) or self.upstream != upstream

    # ---- listening ------------------------------------------------------------------------------

    async def start(self) -> None:
        """proxy.go start: listen (a failure is a 500 with Go's text), then report the address the
        listener has (``listener.Addr().String()``: port 0 becomes the real port)."""
        if self._server is not None:
            return
        sock, self.listen = listen_socket(self.listen)
        self._server = await asyncio.start_server(self._accept, sock=sock)
        self.enabled = True

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()
        for conn in list(self.connections):
            conn.close()
        self.enabled = False
        await asyncio.sleep(0)  # let the closed transports finish

    async def update(self, listen: str, upstream: str, enabled: bool) -> None:
        """proxy.go Proxy.Update: a proxy whose addresses differ stops and takes them; then it starts
        or stops to match ``enabled``."""
        if self.differs(listen, upstream):
            await self.stop()
            self.listen, self.upstream = listen, upstream
        if enabled and not self.enabled:
            await self.start()
        elif not enabled and self.enabled:
            await self.stop()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            host, port = split_host_port(self.upstream)
            upstream = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 10)
        except (ApiError, ValueError, OSError, TimeoutError):
            writer.close()  # proxy.go server: a client whose upstream cannot be dialled is closed
            return
        conn = Connection((reader, writer), upstream, self.connections.discard, self.rng)
        self.connections.add(conn)
        conn.start(self.toxics.values())

    # ---- toxics ---------------------------------------------------------------------------------

    def add_toxic(self, body: Any) -> Toxic:
        toxic = parse_toxic(body, self.toxics)
        same_stream = [t for t in self.toxics.values() if t.direction == toxic.direction]
        previous = same_stream[-1] if same_stream else None
        self.toxics[toxic.name] = toxic
        for conn in list(self.connections):
            conn.add_toxic(toxic, previous)
        return toxic

    def update_toxic(self, name: str, body: Any) -> Toxic:
        """toxic_collection.go UpdateToxicJson: the toxic must exist (404); ``attributes`` decode
        into its struct and ``toxicity`` replaces its own (400 if either fails to decode); the
        connections run it again (link.go UpdateToxic), so its toxicity is rolled again."""
        toxic = self.get_toxic(name)
        fields = gojson.struct_fields(body, "struct { Attributes interface {}; Toxicity float32 }")
        attributes = _attributes(toxic.type, gojson.go_value(fields, "attributes"), toxic.attributes)
        toxicity = gojson.go_float32(fields, "toxicity", toxic.toxicity, ".toxicity")
        toxic.attributes.clear()
        toxic.attributes.update(attributes)  # live states read the same dict
        toxic.toxicity = toxicity
        for conn in list(self.connections):
            conn.update_toxic(toxic)
        return toxic

    def get_toxic(self, name: str) -> Toxic:
        toxic = self.toxics.get(name)
        if toxic is None:
            raise TOXIC_NOT_FOUND.error()
        return toxic

    def remove_toxic(self, name: str) -> None:
        toxic = self.get_toxic(name)
        del self.toxics[name]
        for conn in list(self.connections):
            conn.remove_toxic(toxic)

    def reset_toxics(self) -> None:
        for name in list(self.toxics):
            self.remove_toxic(name)
