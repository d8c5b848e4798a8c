"""A standalone Spark cluster on this machine: one Master and one Worker started from pyspark's own
launcher (``bin/spark-class``), everything on the loopback, for running the unchanged roll-up by master
URL as it runs on a real cluster. Each daemon is a session (process group) of its own, so stopping it
stops the executors it started; every wait has a timeout. Also a sampler of the resident memory of a
set of process sessions, for saying what a roll-up took."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Cluster", "ClusterError", "MemorySampler", "cluster_env", "spark_home", "standalone_cluster"]

START_TIMEOUT = 120.0  # seconds for the Master to lead and the Worker to register


class ClusterError(RuntimeError):
    """A daemon that exited or was not ready in time; the message ends with its log's tail."""


@dataclass(frozen=True, slots=True)
class Cluster:
    url: str
    master_log: Path
    worker_log: Path
    work_dir: Path  # the Worker's: one folder per application, one per executor inside
    sessions: tuple[int, ...]  # the daemons' session ids: their executors are in the Worker's


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def cluster_env() -> dict[str, str]:
    """For the daemons and any driver: the same Python on executors, everything on the loopback."""
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
    )
    return env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else "(no log)"


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _wait_for(what: str, ready, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if ready():
            return
        if process.poll() is not None:
            raise ClusterError(f"{what} exited with {process.returncode} before it was ready:\n{_tail(log)}")
        time.sleep(0.25)
    raise ClusterError(f"{what} was not ready after {START_TIMEOUT:.0f} s:\n{_tail(log)}")


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process group (the daemon's JVM and whatever it started), SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def standalone_cluster(root: Path, *, cores: int = 1, memory: str = "1g") -> Iterator[Cluster]:
    """A Master and a Worker of ``cores`` cores and ``memory``, logging and working under ``root``."""
    spark_class = spark_home() / "bin" / "spark-class"
    if not spark_class.is_file():
        raise ClusterError(f"pyspark has no launcher at {spark_class}")
    root.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    env = cluster_env()
    # no REST submission server: it would take the fixed port 6066, shared with any other master
    env["SPARK_MASTER_OPTS"] = "-Dspark.master.rest.enabled=false"
    master_log, worker_log, work_dir = root / "master.log", root / "worker.log", root / "work"
    processes: list[subprocess.Popen] = []

    def start(log: Path, *args: str) -> subprocess.Popen:
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [str(spark_class), *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=root,
                start_new_session=True,  # its own process group, for _stop()
            )
        processes.append(process)
        return process

    try:
        master = start(
            master_log,
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(port), "--webui-port", "0"),
        )
        _wait_for(
            "the Spark Master",
            lambda: _accepts(port) and "I have been elected leader" in master_log.read_text(),
            master,
            master_log,
        )
        worker = start(
            worker_log,
            "org.apache.spark.deploy.worker.Worker",
            url,
            *("--host", "127.0.0.1", "--cores", str(cores), "--memory", memory, "--webui-port", "0"),
            *("--work-dir", str(work_dir)),
        )
        _wait_for(
            "the Spark Worker", lambda: "Registering worker" in master_log.read_text(), worker, worker_log
        )
        yield Cluster(url, master_log, worker_log, work_dir, (master.pid, worker.pid))
    finally:
        for process in reversed(processes):
            _stop(process)


def _session_and_rss(pid: str) -> tuple[int, int, int] | None:
    """(session id, parent pid, resident bytes) of a process, None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
    rss = next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return int(fields[3]), int(fields[1]), rss


class MemorySampler:
    """Samples, every ``every`` seconds, the resident memory of the processes in ``sessions`` (a
    cluster's daemons and executors) and of this process and its descendants (the driver: Python and
    its JVM), and keeps each one's peak."""

    def __init__(self, sessions: tuple[int, ...] = (), every: float = 0.5) -> None:
        self.sessions, self.every = set(sessions), every
        self.peak_cluster = self.peak_driver = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-sampler", daemon=True)

    def sample(self) -> tuple[int, int]:
        table = {
            pid: found for pid in os.listdir("/proc") if pid.isdigit() and (found := _session_and_rss(pid))
        }
        mine, cluster = {os.getpid()}, 0
        grew = True
        while grew:  # this process's descendants, however deep
            grew = False
            for pid, (_, parent, _) in table.items():
                if parent in mine and int(pid) not in mine:
                    mine.add(int(pid))
                    grew = True
        driver = sum(rss for pid, (_, _, rss) in table.items() if int(pid) in mine)
        cluster = sum(rss for pid, (session, _, rss) in table.items() if session in self.sessions)
        return cluster, driver

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            cluster, driver = self.sample()
            self.peak_cluster, self.peak_driver = (
                max(self.peak_cluster, cluster),
                max(self.peak_driver, driver),
            )

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
