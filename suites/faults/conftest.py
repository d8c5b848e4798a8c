"""Every Toxiproxy server the fault suites can reach, so that the API and toxics suites run the same
assertions against each one that exists, and none is skipped:

- ``embedded``: kconform's own server, in this process (``open_toxiproxy(binary=None)``);
- ``stand-in toxiproxy-server``: a ``toxiproxy-server`` script put first on PATH that runs the
  embedded server with Toxiproxy's command line (``python -m kconform.faults.toxiproxy``), started
  by ``open_toxiproxy()`` exactly as it starts a real binary;
- ``toxiproxy-server``: a real Toxiproxy binary, when one is on PATH;
- ``TOXIPROXY_URL``: a real Toxiproxy already running on this host, when ``$TOXIPROXY_URL`` names it.

The last two appear only where they exist (a CI job with a Toxiproxy container would set
``TOXIPROXY_URL``; its proxies must be able to reach this host's 127.0.0.1), so a machine without
Toxiproxy runs the first two and skips nothing."""

from __future__ import annotations

import fcntl
import http.client
import json
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from kconform.faults.toxiproxy import ToxiproxyHandle, open_toxiproxy

STAND_IN = "stand-in toxiproxy-server"
SERVERS = [
    "embedded",
    STAND_IN,
    *(["toxiproxy-server"] if shutil.which("toxiproxy-server") else []),
    *(["TOXIPROXY_URL"] if os.environ.get("TOXIPROXY_URL") else []),
]
EXPECTED_KIND = {
    "embedded": "embedded",
    STAND_IN: "binary",
    "toxiproxy-server": "binary",
    "TOXIPROXY_URL": "given",
}


def write_stand_in(directory: Path) -> Path:
    """A ``toxiproxy-server`` in ``directory`` that runs kconform's embedded server under Toxiproxy's
    own flags, and appends the arguments it was started with to ``toxiproxy-server.calls``."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "toxiproxy-server"
    calls = directory / "toxiproxy-server.calls"
    script.write_text(
        f'#!/bin/sh\necho "$*" >> "{calls}"\nexec "{sys.executable}" -m kconform.faults.toxiproxy "$@"\n'
    )
    script.chmod(0o755)
    return script


@dataclass(frozen=True, slots=True)
class Server:
    """One Toxiproxy server under test: what the suites call it, and the handle ``open_toxiproxy``
    gave (its ``kind`` says how it was chosen)."""

    name: str
    handle: ToxiproxyHandle

    @property
    def client(self) -> Any:
        """The toxiproxy-python client ``open_toxiproxy`` pointed at this server."""
        return self.handle.client

    @property
    def url(self) -> str:
        return self.handle.url

    @property
    def address(self) -> tuple[str, int]:
        parsed = urlparse(self.handle.url)
        return parsed.hostname or "127.0.0.1", parsed.port or 8474

    def call(
        self, method: str, path: str, body: Any = None, raw: bytes | None = None, headers: dict | None = None
    ) -> tuple[int, Any]:
        """One HTTP call: (status, the JSON body, its text when it is not JSON, or None when empty)."""
        host, port = self.address
        conn = http.client.HTTPConnection(host, port, timeout=10)
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        payload = response.read()
        conn.close()
        if not payload:
            return response.status, None
        try:
            return response.status, json.loads(payload)
        except ValueError:
            return response.status, payload.decode()

    def point_client(self) -> None:
        """toxiproxy-python keeps one server address for the whole process: make it this one."""
        self.handle.client.update_api_consumer(*self.address)

    def clear(self) -> None:
        """No proxies left (a shared server keeps what earlier tests made)."""
        status, proxies = self.call("GET", "/proxies")
        assert status == 200, proxies
        for name in proxies:
            self.call("DELETE", f"/proxies/{name}")


_held: list[int] = []  # lock files this process holds: a worker never waits for itself


@contextmanager
def exclusive(lock: Path) -> Iterator[None]:
    """One test process at a time (pytest-xdist runs several) on a server they all share."""
    if _held:
        yield
        return
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        _held.append(handle.fileno())
        try:
            yield
        finally:
            _held.pop()
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def open_server(name: str, stand_in_dir: Path, lock: Path) -> Iterator[Server]:
    with pytest.MonkeyPatch.context() as patch, ExitStack() as stack:
        if name == STAND_IN:
            write_stand_in(stand_in_dir)
            patch.setenv("PATH", f"{stand_in_dir}{os.pathsep}{os.environ.get('PATH', '')}")
        if name == "embedded":
            opened = open_toxiproxy(binary=None)
        elif name == "TOXIPROXY_URL":
            stack.enter_context(exclusive(lock))  # the tests clear it and count its proxies
            opened = open_toxiproxy(os.environ["TOXIPROXY_URL"])
        else:
            opened = open_toxiproxy()
        handle = stack.enter_context(opened)
        assert handle.kind == EXPECTED_KIND[name], f"{name}: open_toxiproxy chose {handle.kind}"
        server = Server(name, handle)
        server.point_client()
        server.clear()
        yield server


def _lock_file(factory: pytest.TempPathFactory) -> Path:
    return factory.getbasetemp().parent / "kconform-toxiproxy-url.lock"  # shared by xdist's workers


@pytest.fixture(params=SERVERS)
def server(request, tmp_path_factory) -> Iterator[Server]:
    """A Toxiproxy server with no proxies, one of each kind that exists; a new one for each test
    (except the shared ``TOXIPROXY_URL``, which is cleared)."""
    with open_server(
        request.param, tmp_path_factory.mktemp("stand-in"), _lock_file(tmp_path_factory)
    ) as opened:
        yield opened


@pytest.fixture(scope="module", params=SERVERS)
def toxiproxy(request, tmp_path_factory) -> Iterator[Server]:
    """The same servers, one for a whole module."""
    with open_server(
        request.param, tmp_path_factory.mktemp("stand-in"), _lock_file(tmp_path_factory)
    ) as opened:
        yield opened


@pytest.fixture
def stand_in_dir(tmp_path) -> Path:
    """An empty folder for ``write_stand_in`` (tests cannot import this conftest)."""
    return tmp_path / "bin"


@pytest.fixture
def stand_in():
    return write_stand_in
