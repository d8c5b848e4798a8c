"""The ``rdkafka-mock`` target: librdkafka's mock cluster (see rdkafka_mock.py) in a child process, with
its own fault hooks."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

from .base import FaultHooks, Target, TargetError

__all__ = ["RdkafkaMockTarget"]


class _MockFaults(FaultHooks):
    def __init__(self, target: RdkafkaMockTarget) -> None:
        self._target = target

    def nodes(self) -> list[str]:
        return [str(n) for n in range(1, self._target.brokers + 1)]

    def broker_down(self, node_id: int) -> None:
        self._target.command("set_broker_down", node_id)

    def broker_up(self, node_id: int) -> None:
        self._target.command("set_broker_up", node_id)

    def set_rtt(self, node_id: int, rtt_ms: int) -> None:
        self._target.command("set_rtt", node_id, rtt_ms)

    def push_request_errors(self, api_key: int, errors: list[int]) -> None:
        self._target.command("push_request_errors", api_key, list(errors))

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        self._target.command("set_partition_leader", topic, partition, node_id)


class RdkafkaMockTarget(Target):
    """The mock cluster, run in a child process (see mock_process.py) so that a request that crashes
    librdkafka is a finding, not the end of the run."""

    kind = "rdkafka-mock"
    # A conformance rule's set-up asks Metadata below v9: the mock's v9+ answers carry a byte after the
    # message, so they do not decode (rules about Metadata itself still ask at every version).
    conform_setup_caps = {3: 8}

    def __init__(self, name: str | None = None, *, brokers: int = 1) -> None:
        super().__init__(name)
        self.brokers = brokers
        self._process: subprocess.Popen | None = None
        self._bootstrap: str | None = None
        self.crashes = 0
        # One command at a time on the child's pipe (each waits for its reply), and none while the
        # child is replaced: replays side by side call from threads of their own.
        self._channel = threading.RLock()

    def start(self) -> None:
        with self._channel:
            self._start()

    def _start(self) -> None:
        args = [sys.executable, "-m", "kconform.harness.targets.mock_process", str(self.brokers)]
        self._process = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        line = self._process.stdout.readline()
        try:
            self._bootstrap = json.loads(line)["bootstrap"]
        except (ValueError, KeyError):
            error = self._process.stderr.read() if self._process.poll() is not None else line
            self.stop()
            raise TargetError(f"librdkafka's mock cluster did not start: {error.strip()[-500:]}") from None
        # As the reference target and Kafka's shipped server.properties: a new group forms at once, not
        # after the 3 s the mock otherwise waits for more members on every group's first JoinGroup.
        self.command("set_group_initial_rebalance_delay", 0)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        try:
            process.stdin.close()
            process.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def crash_report(self) -> str:
        """What the mock printed before it died (librdkafka's assertion message)."""
        if self._process is None or self._process.poll() is None:
            return ""
        return self._process.stderr.read().strip()[-500:]

    def restart(self) -> None:
        with self._channel:
            self.crashes += 1
            self.stop()
            self._versions = None
            self._start()

    def command(self, op: str, *args) -> None:
        with self._channel:
            reply = self._command(op, args)
        if "error" in reply:
            raise TargetError(f"rdkafka-mock {op}: {reply['error']}")

    def _command(self, op: str, args) -> dict:
        if not self.alive():
            raise TargetError("the rdkafka-mock target is not running")
        try:
            self._process.stdin.write(json.dumps({"op": op, "args": list(args)}) + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        except OSError as exc:  # it died: the caller hears so, as from any command it cannot run
            line, why = "", f" ({exc})"
        else:
            why = ""
        if line:
            return json.loads(line)
        try:  # its pipes closed as it died: wait until it is seen dead, so a caller asking alive() knows
            self._process.wait(5)
        except subprocess.TimeoutExpired:
            pass
        return {"error": f"the mock process ended{why}"}

    @property
    def bootstrap(self) -> str:
        if self._bootstrap is None:
            raise TargetError("the rdkafka-mock target is not started")
        return self._bootstrap

    @property
    def faults(self) -> FaultHooks:
        return _MockFaults(self)

    def create_topic(self, name, partitions=1, replication_factor=1, configs=None) -> None:
        if configs:
            super().create_topic(name, partitions, replication_factor, configs)
        else:
            self.command("create_topic", name, partitions, min(replication_factor, self.brokers))

    def describe(self) -> dict:
        return {**super().describe(), "brokers": self.brokers}

    def broker_addresses(self) -> dict[int, tuple[str, int]]:
        from .rdkafka_mock import broker_addresses

        return broker_addresses(self.bootstrap)

    def advertise(self, broker_id: int, host: str, port: int) -> None:
        """Tell clients to reach ``broker_id`` at host:port from now on (a proxy in front of it)."""
        self.command("set_broker_host_port", broker_id, host, port)
