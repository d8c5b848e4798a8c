"""Proxies and their toxics, in Toxiproxy's model: a proxy listens, connects each client to its
upstream, and pipes through the toxics; toxics are named per proxy (default ``<type>_<stream>``), and
adding or removing one reaches the connections already open."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any

from .link import Connection
from .toxics import ATTRIBUTES

__all__ = ["ApiError", "Proxy", "Toxic", "parse_toxic"]


class ApiError(Exception):
    """An API failure with Toxiproxy's message and HTTP status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


BAD_BODY = "bad request body"


@dataclass
class Toxic:
    name: str
    type: str
    stream: str
    toxicity: float
    attributes: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": self.toxicity,
            "attributes": dict(self.attributes),
        }


def _attributes(kind: str, given: Any, base: dict[str, int]) -> dict[str, int]:
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise ApiError(f"{BAD_BODY}: attributes must be an object", 400)
    out = dict(base)
    for key, value in given.items():
        if key not in out:
            continue  # Toxiproxy decodes into the toxic's struct: other keys are ignored
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise ApiError(f"{BAD_BODY}: attribute {key} must be an integer", 400)
        out[key] = int(value)
    return out


def _toxicity(value: Any, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ApiError(f"{BAD_BODY}: toxicity must be a number", 400)
    return float(value)


def parse_toxic(body: Any, existing: dict[str, Toxic]) -> Toxic:
    """A new toxic from a create request, checked as Toxiproxy's AddToxicJson checks it."""
    if not isinstance(body, dict):
        raise ApiError(f"{BAD_BODY}: expected a JSON object", 400)
    stream = body.get("stream") or "downstream"
    if stream not in ("upstream", "downstream"):
        raise ApiError("stream was invalid, can be either upstream or downstream", 400)
    kind = body.get("type")
    name = body.get("name") or f"{kind}_{stream}"
    if kind not in ATTRIBUTES:
        raise ApiError("invalid toxic type", 400)
    if name in existing:
        raise ApiError("toxic already exists", 409)
    return Toxic(
        name,
        kind,
        stream,
        _toxicity(body.get("toxicity"), 1.0),
        _attributes(kind, body.get("attributes"), ATTRIBUTES[kind]),
    )


class Proxy:
    def __init__(self, name: str, listen: str, upstream: str, enabled: bool = True) -> None:
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.enabled = False
        self.want_enabled = enabled
        self.toxics: dict[str, Toxic] = {}
        self.connections: set[Connection] = set()
        self._server: asyncio.base_events.Server | None = None
        self.rng = random.Random()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            "toxics": [t.to_json() for t in self.toxics.values()],
        }

    # ---- listening ------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._server is not None:
            return
        host, port = split_address(self.listen)
        try:
            self._server = await asyncio.start_server(self._accept, host, port)
        except OSError as exc:
            raise ApiError(f"listen {self.listen}: {exc.strerror or exc}", 500) from None
        bound = self._server.sockets[0].getsockname()
        self.listen = f"{host or bound[0]}:{bound[1]}"  # port 0 becomes the real port, as Toxiproxy does
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

    async def update(self, body: dict[str, Any]) -> None:
        listen = body.get("listen", self.listen)
        upstream = body.get("upstream", self.upstream)
        enabled = body.get("enabled", self.enabled)
        if not isinstance(enabled, bool) or not isinstance(listen, str) or not isinstance(upstream, str):
            raise ApiError(f"{BAD_BODY}: listen and upstream are strings, enabled a boolean", 400)
        if (listen, upstream) != (self.listen, self.upstream) and self.enabled:
            await self.stop()  # Toxiproxy restarts a proxy whose addresses change
            self.listen, self.upstream = listen, upstream
            if enabled:
                await self.start()
            return
        self.listen, self.upstream = listen, upstream
        if enabled and not self.enabled:
            await self.start()
        elif not enabled and self.enabled:
            await self.stop()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = split_address(self.upstream)
        try:
            upstream = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
        except (OSError, TimeoutError):
            writer.close()  # as Toxiproxy: a client whose upstream cannot be reached is closed
            return
        conn = Connection((reader, writer), upstream, self.connections.discard, self.rng)
        self.connections.add(conn)
        conn.start(self.toxics.values())

    # ---- toxics ---------------------------------------------------------------------------------

    def add_toxic(self, body: Any) -> Toxic:
        toxic = parse_toxic(body, self.toxics)
        self.toxics[toxic.name] = toxic
        for conn in list(self.connections):
            conn.add_toxic(toxic)
        return toxic

    def update_toxic(self, name: str, body: Any) -> Toxic:
        toxic = self.get_toxic(name)
        if not isinstance(body, dict):
            raise ApiError(f"{BAD_BODY}: expected a JSON object", 400)
        attributes = _attributes(toxic.type, body.get("attributes"), toxic.attributes)
        toxicity = _toxicity(body.get("toxicity"), toxic.toxicity)
        toxic.attributes.clear()
        toxic.attributes.update(attributes)  # live states read the same dict, as Toxiproxy re-pipes
        toxic.toxicity = toxicity
        return toxic

    def get_toxic(self, name: str) -> Toxic:
        toxic = self.toxics.get(name)
        if toxic is None:
            raise ApiError("toxic not found", 404)
        return toxic

    def remove_toxic(self, name: str) -> None:
        toxic = self.get_toxic(name)
        del self.toxics[name]
        for conn in list(self.connections):
            conn.remove_toxic(toxic)

    def reset_toxics(self) -> None:
        for name in list(self.toxics):
            self.remove_toxic(name)


def split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ApiError(f"{BAD_BODY}: {address!r} is not HOST:PORT", 400)
    return host.strip("[]") or "0.0.0.0", int(port)
