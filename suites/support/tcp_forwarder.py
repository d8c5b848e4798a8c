"""A TCP forwarder for the live cluster suites: one listening port that pipes every connection to an
upstream address, counting the connections it made; ``cut`` closes them all and then takes new ones
only to close them at once (the link is down, as a proxy that lost its upstream), ``heal`` forwards
again on the same port. Threads, not asyncio: the tests that use it are synchronous."""

from __future__ import annotations

import contextlib
import socket
import threading

__all__ = ["TcpForwarder"]

_CHUNK = 64 * 1024


class TcpForwarder:
    def __init__(self, upstream: tuple[str, int], host: str = "127.0.0.1") -> None:
        self.upstream = upstream
        self._listener = socket.create_server((host, 0))
        self.address = f"{host}:{self._listener.getsockname()[1]}"
        self.connections = 0  # forwarded since start, cuts included
        self._open: set[socket.socket] = set()
        self._down = False
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name=f"forward-{self.address}").start()

    def cut(self) -> None:
        with self._lock:
            self._down = True
            doomed, self._open = self._open, set()
        for sock in doomed:
            _close(sock)

    def heal(self) -> None:
        with self._lock:
            self._down = False

    def close(self) -> None:
        self.cut()
        _close(self._listener)  # shutdown wakes the accepting thread

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                down = self._down
            if down:
                _close(client)
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _close(client)
                continue
            server.settimeout(None)
            with self._lock:
                self.connections += 1
                self._open |= {client, server}
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(_CHUNK):
                sink.sendall(data)
        except OSError:
            pass
        finally:  # one side gone: the whole connection goes
            with self._lock:
                self._open -= {source, sink}
            _close(source)
            _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv or accept
    sock.close()
