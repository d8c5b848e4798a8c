"""Start reference broker nodes as operating-system processes, so they can be killed (SIGKILL) or
frozen (SIGSTOP) for real. Tests, the harness's reference target and ``kconform cluster`` use this."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["BrokerProcess", "start_broker_process"]

_LISTENING = re.compile(r"kconform (?:broker|controller) (\d+) listening on (\S+):(\d+)")
_LISTENER = re.compile(r"kconform (?:broker|controller) \d+ listener (\S+) \((\S+)\) on (\S+):(\d+)")


@dataclass
class BrokerProcess:
    node_id: int
    data_dir: Path
    host: str
    port: int
    process: subprocess.Popen
    output: list[str] = field(default_factory=list)
    listeners: dict[str, tuple[str, int]] = field(default_factory=dict)  # name -> bound HOST, PORT

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def bootstrap_of(self, listener: str) -> str:
        host, port = self.listeners[listener.upper()]
        return f"{'127.0.0.1' if host in ('', '0.0.0.0', '::') else host}:{port}"

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 20.0) -> int:
        """Clean shutdown (SIGTERM), escalating to SIGKILL if it does not finish in time."""
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait()

    def kill(self) -> int:
        """SIGKILL: no shutdown work at all, as in a crash."""
        if self.alive():
            self.process.kill()
        return self.process.wait()

    def freeze(self) -> None:
        os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)


def start_broker_process(
    data_dir: Path,
    *,
    node_id: int = 1,
    host: str = "127.0.0.1",
    port: int = 0,
    overrides: dict[str, str] | None = None,
    timeout: float = 30.0,
    env: dict[str, str] | None = None,
    advertise: str | None = None,
    kafka_version: str | None = None,
) -> BrokerProcess:
    """Start a node (a broker, or a controller with ``process.roles=controller`` among the overrides)
    and wait until it listens; port 0 picks a free port. ``advertise`` (HOST:PORT) is
    the address the broker gives clients in metadata, e.g. a proxy in front of it; ``kafka_version`` the
    Apache Kafka release it answers as (default: the newest the codecs cover)."""
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    args = [
        sys.executable,
        "-m",
        "kconform.reference_broker",
        "--data-dir",
        str(data_dir),
        "--node-id",
        str(node_id),
        "--log-level",
        os.environ.get("KCONFORM_BROKER_LOG_LEVEL", "WARNING"),
    ]
    if "listeners" not in (overrides or {}):  # else the listeners property says where to bind
        args += ["--listen", f"{host}:{port}"]
    if advertise:
        args += ["--advertise", advertise]
    if kafka_version:
        args += ["--kafka-version", kafka_version]
    args += [f"{k}={v}" for k, v in (overrides or {}).items()]
    environment = {**os.environ, **(env or {}), "KCONFORM_PARENT_PID": str(os.getpid())}
    process = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment
    )
    output: list[str] = []
    found: dict = {}
    listeners: dict[str, tuple[str, int]] = {}
    ready = threading.Event()

    def pump() -> None:  # keep reading so the broker never blocks on a full pipe
        for line in process.stdout:
            output.append(line.rstrip("\n"))
            listener = _LISTENER.search(line)
            if listener:
                listeners[listener.group(1)] = (listener.group(3), int(listener.group(4)))
            match = _LISTENING.search(line)
            if match and not ready.is_set():
                found["host"], found["port"] = match.group(2), int(match.group(3))
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout
    while not ready.wait(0.05):
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("broker did not start in time:\n" + "\n".join(output[-30:]))
    if "port" not in found:
        process.wait()
        raise RuntimeError(f"broker exited with {process.returncode}:\n" + "\n".join(output[-30:]))
    return BrokerProcess(node_id, data_dir, found["host"], found["port"], process, output, listeners)
