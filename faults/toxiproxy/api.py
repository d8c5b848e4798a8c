"""Toxiproxy's HTTP API (api.go) over a small asyncio HTTP/1.1 server: the same routes, JSON shapes,
status codes and error bodies (``{"error": ..., "status": ...}``), so toxiproxy-python, Toxiproxy's own
CLI and any other client drive it unchanged."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from .proxy import BAD_BODY, ApiError, Proxy

__all__ = ["ToxiproxyApi", "VERSION"]

VERSION = "2.12.0-kconform"  # the Toxiproxy API level it speaks, and who serves it
_REASONS = {
    200: "OK",
    201: "Created",
    204: "No Content",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Payload Too Large",
    500: "Internal Server Error",
}
_MAX_BODY = 1 << 20
log = logging.getLogger("kconform.toxiproxy")


class ToxiproxyApi:
    def __init__(self) -> None:
        self.proxies: dict[str, Proxy] = {}
        self._server: asyncio.base_events.Server | None = None
        self._lock = asyncio.Lock()
        self._clients: set[asyncio.StreamWriter] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._serve, host, port)
        return self._server.sockets[0].getsockname()[:2]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for proxy in self.proxies.values():
            await proxy.stop()
        for writer in list(self._clients):
            writer.close()
        await asyncio.sleep(0)  # let the transports finish closing

    # ---- HTTP -----------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._clients.add(writer)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                method, path, body, keep_alive = request
                status, payload = await self.handle(method, path, body)
                _write_response(writer, status, payload, keep_alive)
                await writer.drain()
                if not keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except _BadHttp as exc:
            _write_response(writer, exc.status, {"error": str(exc), "status": exc.status}, False)
        finally:
            self._clients.discard(writer)
            writer.close()

    async def handle(self, method: str, path: str, raw: bytes) -> tuple[int, Any]:
        """One API call: (status, JSON payload or None for an empty body)."""
        try:
            async with self._lock:  # one change at a time, as the collection's mutex does
                return await self._route(method, path.split("?", 1)[0].rstrip("/") or "/", raw)
        except ApiError as exc:
            return exc.status, {"error": exc.message, "status": exc.status}
        except Exception as exc:  # noqa: BLE001 - a bug here answers 500 and keeps the server up
            log.exception("toxiproxy API %s %s failed", method, path)
            return 500, {"error": f"{type(exc).__name__}: {exc}", "status": 500}

    async def _route(self, method: str, path: str, raw: bytes) -> tuple[int, Any]:
        parts = [p for p in path.split("/") if p]
        if parts == ["version"] and method == "GET":
            return 200, {"version": VERSION}
        if parts == ["reset"] and method == "POST":
            for proxy in self.proxies.values():
                await proxy.start()
                proxy.reset_toxics()
            return 204, None
        if parts == ["populate"] and method == "POST":
            return await self._populate(_json(raw))
        if parts == ["proxies"]:
            if method == "GET":
                return 200, {name: p.to_json() for name, p in self.proxies.items()}
            if method == "POST":
                proxy = await self._create(_json(raw))
                return 201, proxy.to_json()
        if len(parts) >= 2 and parts[0] == "proxies":
            proxy = self.proxies.get(parts[1])
            if proxy is None:
                raise ApiError("proxy not found", 404)
            if len(parts) == 2:
                if method == "GET":
                    return 200, proxy.to_json()
                if method in ("POST", "PATCH"):
                    body = _json(raw)
                    if not isinstance(body, dict):
                        raise ApiError(f"{BAD_BODY}: expected a JSON object", 400)
                    await proxy.update(body)
                    return 200, proxy.to_json()
                if method == "DELETE":
                    await proxy.stop()
                    del self.proxies[proxy.name]
                    return 204, None
            if len(parts) == 3 and parts[2] == "toxics":
                if method == "GET":
                    return 200, [t.to_json() for t in proxy.toxics.values()]
                if method == "POST":
                    return 200, proxy.add_toxic(_json(raw)).to_json()
            if len(parts) == 4 and parts[2] == "toxics":
                if method == "GET":
                    return 200, proxy.get_toxic(parts[3]).to_json()
                if method in ("POST", "PATCH"):
                    return 200, proxy.update_toxic(parts[3], _json(raw)).to_json()
                if method == "DELETE":
                    proxy.remove_toxic(parts[3])
                    return 204, None
        raise ApiError(f"no route for {method} {path}", 404 if method in ("GET", "DELETE") else 405)

    async def _create(self, body: Any) -> Proxy:
        if not isinstance(body, dict):
            raise ApiError(f"{BAD_BODY}: expected a JSON object", 400)
        for key in ("name", "upstream"):
            if not body.get(key):
                raise ApiError(f"missing required field: {key}", 400)
        name = body["name"]
        if name in self.proxies:
            raise ApiError("proxy already exists", 409)
        enabled = body.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ApiError(f"{BAD_BODY}: enabled must be a boolean", 400)
        proxy = Proxy(name, str(body.get("listen") or "127.0.0.1:0"), str(body["upstream"]), enabled)
        if enabled:
            await proxy.start()
        self.proxies[name] = proxy
        return proxy

    async def _populate(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, list):
            raise ApiError(f"{BAD_BODY}: expected a JSON array of proxies", 400)
        made: list[Proxy] = []
        try:
            for entry in body:
                if not isinstance(entry, dict):
                    raise ApiError(f"{BAD_BODY}: each proxy is a JSON object", 400)
                existing = self.proxies.get(entry.get("name", ""))
                if existing is not None and (
                    existing.listen != entry.get("listen") or existing.upstream != entry.get("upstream")
                ):
                    await existing.stop()
                    del self.proxies[existing.name]
                    existing = None
                made.append(existing or await self._create(entry))
        except ApiError as exc:
            return exc.status, {
                "error": exc.message,
                "status": exc.status,
                "proxies": [p.to_json() for p in made],
            }
        return 201, {"proxies": [p.to_json() for p in made]}


class _BadHttp(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(f"{BAD_BODY}: {exc}", 400) from None


async def _read_request(reader: asyncio.StreamReader):
    line = await reader.readline()
    if not line:
        return None
    try:
        method, target, version = line.decode("latin-1").split()
    except ValueError:
        raise _BadHttp("malformed request line") from None
    headers: dict[str, str] = {}
    while True:
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n", b""):
            break
        name, _, value = raw.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            size = int((await reader.readline()).split(b";")[0] or b"0", 16)
            if size == 0:
                await reader.readline()
                break
            if len(body) + size > _MAX_BODY:
                raise _BadHttp("request body too large", 413)
            body += await reader.readexactly(size)
            await reader.readline()
        body = bytes(body)
    else:
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            raise _BadHttp("bad Content-Length") from None
        if length < 0 or length > _MAX_BODY:
            raise _BadHttp("request body too large", 413)
        body = await reader.readexactly(length) if length else b""
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    return method.upper(), target, body, keep_alive


def _write_response(writer: asyncio.StreamWriter, status: int, payload: Any, keep_alive: bool) -> None:
    body = b"" if payload is None else json.dumps(payload).encode() + b"\n"
    head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
    if payload is not None:
        head.append("Content-Type: application/json")
    head.append(f"Content-Length: {len(body)}")
    head.append("Connection: " + ("keep-alive" if keep_alive else "close"))
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
