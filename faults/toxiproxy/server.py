"""kconform's embedded Toxiproxy-compatible server, run on its own event loop in a background thread
(for the harness) or in the foreground (``kconform toxiproxy --listen``)."""

from __future__ import annotations

import asyncio
import logging
import threading

from .api import ToxiproxyApi

log = logging.getLogger("kconform.toxiproxy")

__all__ = ["EmbeddedToxiproxy", "serve_forever"]


class EmbeddedToxiproxy:
    """``with EmbeddedToxiproxy() as server: server.url`` (port 0 picks a free port)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._api: ToxiproxyApi | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> EmbeddedToxiproxy:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            self._api = ToxiproxyApi()
            try:
                self.host, self.port = loop.run_until_complete(self._api.start(self.host, self.port))
            except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._api.stop())
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=run, name="kconform-toxiproxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise RuntimeError(
                f"the embedded Toxiproxy cannot listen on {self.host}:{self.port}: {failure[0]}"
            ) from failure[0]
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop = self._thread = None

    def __enter__(self) -> EmbeddedToxiproxy:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


async def serve_forever(host: str, port: int, on_ready=None, *, config: bytes | None = None) -> None:
    """Serve until cancelled; ``config`` is a JSON list of proxies to create first, as
    ``toxiproxy-server -config`` populates them (api.go ``PopulateConfig``)."""
    api = ToxiproxyApi()
    if config is not None:
        answer = await api.populate({}, config)
        if answer.status != 201:
            log.error("the -config proxies were not all created: %s", answer.body.decode(errors="replace"))
    bound = await api.start(host, port)
    if on_ready is not None:
        on_ready(bound)
    try:
        await asyncio.Event().wait()
    finally:
        await api.stop()
