"""Toxiproxy's HTTP API (Shopify/toxiproxy api.go) over a small asyncio HTTP/1.1 server: the same
routes, JSON shapes, status codes and error bodies, so toxiproxy-python, Toxiproxy's own CLI and any
other client drive it unchanged. Each handler names the api.go function it follows.

Routing is gorilla/mux's as ``ApiServer.Routes`` sets it up (mux.go ``Router.ServeHTTP``): the path is
percent-decoded and must be clean (else 301 to the clean one), a ``{var}`` is one or more characters
other than ``/``, a path no route has is ``404 page not found``, a route with another method is 405
with no body, and the middlewares (``stopBrowsersMiddleware``: 403 for a ``Mozilla/`` user agent) run
only on a match."""

from __future__ import annotations

import asyncio
import json
import logging
import posixpath
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from . import gojson
from .errors import MISSING_FIELD, PROXY_ALREADY_EXISTS, PROXY_NOT_FOUND, ApiError
from .proxy import Proxy

__all__ = ["VERSION", "Response", "ToxiproxyApi"]

VERSION = "2.12.0-kconform"  # the Toxiproxy API level it speaks, and who serves it
_REASONS = {
    200: "OK",
    201: "Created",
    204: "No Content",
    301: "Moved Permanently",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Payload Too Large",
    500: "Internal Server Error",
}
_MAX_BODY = 1 << 20
_TEXT = "text/plain; charset=utf-8"
log = logging.getLogger("kconform.toxiproxy")


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str | None = None
    location: str | None = None


def _marshal(value: Any) -> bytes:
    """``json.Marshal``: compact, UTF-8, with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()


def _json(status: int, value: Any) -> Response:
    return Response(status, _marshal(value), "application/json")


def _error(exc: ApiError) -> Response:
    """api.go ``apiError``: ``http.Error`` (text/plain, a newline after) with the JSON error."""
    return Response(exc.status, _marshal({"error": exc.message, "status": exc.status}) + b"\n", _TEXT)


_ROUTES: list[tuple[re.Pattern[str], frozenset[str], str]] = []  # (path, methods, handler name)


def _route(template: str, *methods: str, handler: str) -> None:
    pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template)
    _ROUTES.append((re.compile(f"^{pattern}$"), frozenset(methods), handler))


# api.go ApiServer.Routes, in its order
_route("/reset", "POST", handler="reset_state")
_route("/proxies", "GET", handler="proxy_index")
_route("/proxies", "POST", handler="proxy_create")
_route("/populate", "POST", handler="populate")
_route("/proxies/{proxy}", "GET", handler="proxy_show")
_route("/proxies/{proxy}", "POST", "PATCH", handler="proxy_update")
_route("/proxies/{proxy}", "DELETE", handler="proxy_delete")
_route("/proxies/{proxy}/toxics", "GET", handler="toxic_index")
_route("/proxies/{proxy}/toxics", "POST", handler="toxic_create")
_route("/proxies/{proxy}/toxics/{toxic}", "GET", handler="toxic_show")
_route("/proxies/{proxy}/toxics/{toxic}", "POST", "PATCH", handler="toxic_update")
_route("/proxies/{proxy}/toxics/{toxic}", "DELETE", handler="toxic_delete")
_route("/version", "GET", handler="version")


def _clean_path(path: str) -> str:
    """gorilla/mux ``cleanPath``: ``path.Clean``, rooted, keeping a trailing slash."""
    if not path:
        return "/"
    if not path.startswith("/"):
        path = "/" + path
    cleaned = posixpath.normpath(path)
    cleaned = "/" + cleaned.lstrip("/")  # POSIX keeps a leading "//"; Go does not
    if path.endswith("/") and cleaned != "/":
        cleaned += "/"
    return cleaned


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
                method, target, headers, body, keep_alive = request
                response = await self.handle(method, target, body, user_agent=headers.get("user-agent", ""))
                _write_response(writer, response, keep_alive)
                await writer.drain()
                if not keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except _BadHttp as exc:
            _write_response(writer, Response(exc.status, f"{exc}\n".encode(), _TEXT), False)
        finally:
            self._clients.discard(writer)
            writer.close()

    async def handle(self, method: str, target: str, raw: bytes, *, user_agent: str = "") -> Response:
        """One API call, routed as gorilla/mux routes it."""
        raw_path, _, query = target.partition("?")
        path = unquote(raw_path)
        clean = _clean_path(path)
        if clean != path:
            return Response(301, location=clean + (f"?{query}" if query else ""))
        mismatch = False
        for pattern, methods, name in _ROUTES:
            match = pattern.match(path)
            if match is None:
                continue
            if method not in methods:
                mismatch = True
                continue
            if user_agent.startswith("Mozilla/"):  # api.go stopBrowsersMiddleware
                return Response(403, b"User agent not allowed\n", _TEXT)
            handler = getattr(self, name)
            try:
                async with self._lock:  # one change at a time, as the collections' mutexes do
                    return await handler(match.groupdict(), raw)
            except ApiError as exc:
                return _error(exc)
            except Exception as exc:  # noqa: BLE001 - a bug here answers 500 and keeps the server up
                log.exception("toxiproxy API %s %s failed", method, target)
                return _error(ApiError(f"{type(exc).__name__}: {exc}", 500))
        if mismatch:
            return Response(405)  # mux.go methodNotAllowed: the status alone
        return Response(404, b"404 page not found\n", _TEXT)  # net/http NotFound

    # ---- handlers (api.go) ----------------------------------------------------------------------

    def _proxy(self, name: str) -> Proxy:
        """proxy_collection.go ``Get``."""
        proxy = self.proxies.get(name)
        if proxy is None:
            raise PROXY_NOT_FOUND.error()
        return proxy

    async def version(self, _vars: dict[str, str], _raw: bytes) -> Response:
        """``Version``: written by hand, with a newline, as JSON."""
        return Response(200, f'{{"version": "{VERSION}"}}\n'.encode(), "application/json;charset=utf-8")

    async def reset_state(self, _vars: dict[str, str], _raw: bytes) -> Response:
        """``ResetState``: every proxy started (one that cannot listen fails the call) and its toxics
        removed."""
        for proxy in list(self.proxies.values()):
            await proxy.start()
            proxy.reset_toxics()
        return Response(204)

    async def proxy_index(self, _vars: dict[str, str], _raw: bytes) -> Response:
        return _json(200, {name: p.to_json() for name, p in self.proxies.items()})

    async def proxy_create(self, _vars: dict[str, str], raw: bytes) -> Response:
        """``ProxyCreate``: decode into ``Proxy{Enabled: true}`` (400), name then upstream required
        (400 ``missing required field: name``), then proxy_collection.go ``Add``: a taken name is 409,
        checked before the proxy starts (a failed listen is 500)."""
        fields = gojson.struct_fields(gojson.decode_body(raw), "toxiproxy.Proxy")
        name = gojson.go_string(fields, "name", "", "Proxy.name")
        listen = gojson.go_string(fields, "listen", "", "Proxy.listen")
        upstream = gojson.go_string(fields, "upstream", "", "Proxy.upstream")
        enabled = gojson.go_bool(fields, "enabled", True, "Proxy.enabled")
        if not name:
            raise MISSING_FIELD.join("name")
        if not upstream:
            raise MISSING_FIELD.join("upstream")
        if name in self.proxies:
            raise PROXY_ALREADY_EXISTS.error()
        proxy = Proxy(name, listen, upstream)
        if enabled:
            await proxy.start()
        self.proxies[name] = proxy
        return _json(201, proxy.to_json())

    async def populate(self, _vars: dict[str, str], raw: bytes) -> Response:
        """``Populate`` and proxy_collection.go ``PopulateJson``: the whole list decodes and every
        entry has a name and an upstream before anything changes (400, ``... name at proxy 2``,
        ``proxies`` null); then each entry, in order, through ``AddOrReplace``: an existing proxy
        whose addresses resolve the same is kept as it is, another is stopped and replaced. A failure
        there (500: an address that does not resolve or listen) stops the list and the answer carries
        the proxies done so far. Success is 201. An empty list of proxies is written as null."""
        try:
            entries = _populate_entries(gojson.decode_body(raw))
        except ApiError as exc:
            return _json(exc.status, {"error": exc.message, "status": exc.status, "proxies": None})
        done: list[Proxy] = []
        try:
            for name, listen, upstream, enabled in entries:
                existing = self.proxies.get(name)
                if existing is not None:
                    if not existing.differs(listen, upstream):
                        done.append(existing)
                        continue
                    await existing.stop()
                proxy = Proxy(name, listen, upstream)
                if enabled:
                    await proxy.start()
                self.proxies[name] = proxy
                done.append(proxy)
        except ApiError as exc:
            proxies = [p.to_json() for p in done] or None
            return _json(exc.status, {"error": exc.message, "status": exc.status, "proxies": proxies})
        return _json(201, {"proxies": [p.to_json() for p in done] or None})

    async def proxy_show(self, v: dict[str, str], _raw: bytes) -> Response:
        return _json(200, self._proxy(v["proxy"]).to_json())

    async def proxy_update(self, v: dict[str, str], raw: bytes) -> Response:
        """``ProxyUpdate`` (POST or PATCH): the body decodes over the proxy's own listen, upstream and
        enabled (400), then proxy.go ``Update`` (an address that does not resolve or listen: 500)."""
        proxy = self._proxy(v["proxy"])
        fields = gojson.struct_fields(gojson.decode_body(raw), "toxiproxy.Proxy")
        listen = gojson.go_string(fields, "listen", proxy.listen, "Proxy.listen")
        upstream = gojson.go_string(fields, "upstream", proxy.upstream, "Proxy.upstream")
        enabled = gojson.go_bool(fields, "enabled", proxy.enabled, "Proxy.enabled")
        await proxy.update(listen, upstream, enabled)
        return _json(200, proxy.to_json())

    async def proxy_delete(self, v: dict[str, str], _raw: bytes) -> Response:
        """``ProxyDelete`` and proxy_collection.go ``Remove``: 404 if missing, else stopped, 204."""
        proxy = self._proxy(v["proxy"])
        await proxy.stop()
        del self.proxies[proxy.name]
        return Response(204)

    async def toxic_index(self, v: dict[str, str], _raw: bytes) -> Response:
        return _json(200, self._proxy(v["proxy"]).toxic_list())

    async def toxic_create(self, v: dict[str, str], raw: bytes) -> Response:
        """``ToxicCreate``: 200 (not 201) with the toxic; toxic_collection.go ``AddToxicJson``."""
        proxy = self._proxy(v["proxy"])
        return _json(200, proxy.add_toxic(gojson.decode_body(raw)).to_json())

    async def toxic_show(self, v: dict[str, str], _raw: bytes) -> Response:
        return _json(200, self._proxy(v["proxy"]).get_toxic(v["toxic"]).to_json())

    async def toxic_update(self, v: dict[str, str], raw: bytes) -> Response:
        """``ToxicUpdate`` (POST or PATCH): toxic_collection.go ``UpdateToxicJson`` looks the toxic up
        (404) before it reads the body."""
        proxy = self._proxy(v["proxy"])
        toxic = proxy.get_toxic(v["toxic"])
        return _json(200, proxy.update_toxic(toxic.name, gojson.decode_body(raw)).to_json())

    async def toxic_delete(self, v: dict[str, str], _raw: bytes) -> Response:
        self._proxy(v["proxy"]).remove_toxic(v["toxic"])
        return Response(204)


def _populate_entries(body: Any) -> list[tuple[str, str, str, bool]]:
    """proxy_collection.go ``PopulateJson``'s checks, all before any proxy changes."""
    if body is None:
        return []
    if not isinstance(body, list):
        raise gojson.bad_body(
            f"json: cannot unmarshal {gojson.json_kind(body)} into Go value of type []struct {{...}}"
        )
    decoded = []
    for entry in body:
        fields = gojson.struct_fields(entry, "struct { toxiproxy.Proxy; Enabled *bool }")
        decoded.append(
            (
                gojson.go_string(fields, "name", "", "Proxy.name"),
                gojson.go_string(fields, "listen", "", "Proxy.listen"),
                gojson.go_string(fields, "upstream", "", "Proxy.upstream"),
                gojson.go_bool(fields, "enabled", True, ".enabled"),
            )
        )
    for number, (name, _, upstream, _) in enumerate(decoded, 1):
        if not name:
            raise MISSING_FIELD.join(f"name at proxy {number}")
        if not upstream:
            raise MISSING_FIELD.join(f"upstream at proxy {number}")
    return decoded


class _BadHttp(Exception):
    """A request that is not HTTP/1.x: net/http answers it with a plain-text 400 and closes."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


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
    return method, target, headers, body, keep_alive  # methods are case-sensitive, as in Go


def _write_response(writer: asyncio.StreamWriter, response: Response, keep_alive: bool) -> None:
    head = [f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Status')}"]
    if response.content_type is not None:
        head.append(f"Content-Type: {response.content_type}")
    if response.content_type == _TEXT and response.status >= 400:
        head.append("X-Content-Type-Options: nosniff")  # as net/http's Error sets it
    if response.location is not None:
        head.append(f"Location: {response.location}")
    head.append(f"Content-Length: {len(response.body)}")
    head.append("Connection: " + ("keep-alive" if keep_alive else "close"))
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + response.body)
