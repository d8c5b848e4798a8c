"""Which Toxiproxy a run uses: the one the user gives (a URL), else ``toxiproxy-server`` from PATH
(started on a free port), else kconform's embedded server. Either way the run gets the URL and a
toxiproxy-python client pointed at it.

toxiproxy-python keeps the server address in a class attribute, so one process drives one Toxiproxy at
a time; ``open_toxiproxy`` points it at the server it opens."""

from __future__ import annotations

import http.client
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from .server import EmbeddedToxiproxy

__all__ = ["ToxiproxyHandle", "open_toxiproxy"]


@dataclass
class ToxiproxyHandle:
    url: str
    kind: str  # given, binary, embedded
    client: Any  # toxiproxy.Toxiproxy


def _client(url: str):
    from toxiproxy import Toxiproxy
    from toxiproxy.api import APIConsumer

    parsed = urlparse(url if "://" in url else f"http://{url}")
    APIConsumer.host, APIConsumer.port = parsed.hostname or "127.0.0.1", parsed.port or 8474
    return Toxiproxy()


def _answers(url: str, timeout: float) -> bool:
    """Whether a Toxiproxy API answers at ``url`` (its /version, as JSON or, before 2.6, as text)."""
    try:
        with urllib.request.urlopen(f"{url}/version", timeout=timeout) as response:
            return response.status == 200
    except (OSError, http.client.HTTPException, ValueError):
        return False


def _free_port() -> int:
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def open_toxiproxy(
    url: str | None = None, *, binary: str | None = "toxiproxy-server"
) -> Iterator[ToxiproxyHandle]:
    if url:
        url = url if "://" in url else f"http://{url}"
        if not _answers(url, 5):
            raise RuntimeError(
                f"no Toxiproxy answers at {url} (start it, or leave --toxiproxy out to use "
                "kconform's embedded server)"
            )
        yield ToxiproxyHandle(url, "given", _client(url))
        return
    path = shutil.which(binary) if binary else None
    if path:
        port = _free_port()
        process = subprocess.Popen(
            [path, "-host", "127.0.0.1", "-port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 10
            while not _answers(url, 0.5):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{path} did not start on port {port}")
                time.sleep(0.05)
            yield ToxiproxyHandle(url, "binary", _client(url))
        finally:
            process.terminate()
            process.wait(10)
        return
    with EmbeddedToxiproxy() as server:
        yield ToxiproxyHandle(server.url, "embedded", _client(server.url))
