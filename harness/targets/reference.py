"""The ``reference`` target: our broker, started as an operating-system process (so faults can kill or
freeze it for real), with its data in a directory of its own."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from .base import FaultHooks, Target, TargetError
from .client_listener import checked_broker_properties, client_listener_settings

__all__ = ["ReferenceTarget"]


class _ProcessFaults(FaultHooks):
    def __init__(self, target: ReferenceTarget) -> None:
        self._target = target

    def broker_down(self, node_id: int) -> None:
        self._target.node.freeze()

    def broker_up(self, node_id: int) -> None:
        self._target.node.thaw()


# As Apache Kafka's shipped config/server.properties (and our docker targets) set it: a test target's
# first consumer group forms at once instead of after the 3 s a production default waits for members.
# Sessions may be as short as 1 s (Kafka's own integration tests lower the 6 s minimum too), so that
# generated group cases need not wait out long sessions on targets that hold a rejoin for the session.
TARGET_DEFAULTS = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000"}


class ReferenceTarget(Target):
    kind = "reference"

    def __init__(
        self,
        name: str | None = None,
        *,
        data_dir: str | Path | None = None,
        overrides: dict[str, str] | None = None,
        planted: tuple[str, ...] = (),
        port: int = 0,
        advertise: str | None = None,
        kafka_version: str | None = None,
        client_protocol: str = "PLAINTEXT",
        broker_properties: dict[str, str] | None = None,
    ) -> None:
        """``client_protocol`` other than PLAINTEXT serves clients on a secured listener
        (``client_listener_settings``), secured by ``broker_properties`` (Kafka's names)."""
        super().__init__(name)
        self.kafka_version = kafka_version  # the Apache Kafka release the broker answers as
        self.port = port  # fixed, so a restarted broker comes back where its proxy points
        self.advertise = advertise
        self._given_dir = Path(data_dir) if data_dir is not None else None
        self._owned_dir: Path | None = None
        self.overrides = {**TARGET_DEFAULTS, **(overrides or {})}
        self.planted = tuple(planted)  # test-only misbehaviour (reference_broker/planted.py)
        self.client_protocol = "PLAINTEXT"
        if client_protocol.upper() != "PLAINTEXT" or broker_properties:
            self.secure_brokers(client_protocol, broker_properties or {})
        self.node = None

    def secure_brokers(self, protocol: str, properties: dict[str, str]) -> None:
        """Serve clients on a ``protocol`` listener secured by ``properties`` (``client_listener``)."""
        self.client_protocol = checked_broker_properties(protocol, properties, self.name)
        self.overrides.update(properties)

    def start(self) -> None:
        directory = self._given_dir or self._owned_dir
        if directory is None:
            self._owned_dir = directory = Path(tempfile.mkdtemp(prefix="kconform-reference-"))
        self._launch(directory)

    def _launch(self, directory: Path) -> None:
        from kconform.reference_broker.process import start_broker_process

        overrides, advertise = self.overrides, self.advertise
        if self.client_protocol != "PLAINTEXT":
            listeners = client_listener_settings(self.client_protocol, "127.0.0.1", self.port, self.advertise)
            overrides, advertise = {**overrides, **listeners}, None
        try:
            env = {"KCONFORM_PLANTED_BUGS": ",".join(self.planted)} if self.planted else None
            self.node = start_broker_process(
                directory,
                port=self.port,
                overrides=overrides,
                env=env,
                advertise=advertise,
                kafka_version=self.kafka_version,
            )
        except RuntimeError as exc:
            raise TargetError(f"the reference broker did not start: {exc}") from exc
        self.port = self.node.port  # a restart comes back on the same port

    def stop(self) -> None:
        if self.node is not None:
            if self._owned_dir is not None:
                # Its data is deleted next: a clean shutdown would only fsync checkpoints for every
                # partition a campaign created (thousands: tens of seconds) to throw them away.
                self.node.kill()
            else:
                if self.node.alive():
                    self.node.thaw()  # a frozen process cannot handle SIGTERM
                self.node.stop()
            self.node = None
        if self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            self._owned_dir = None

    def alive(self) -> bool:
        return self.node is not None and self.node.alive()

    def crash_report(self) -> str:
        return "\n".join(self.node.output[-20:]) if self.node is not None else ""

    def restart(self) -> None:
        """Stop the broker (or reap it, if it died) and start it again on its data directory and port,
        so it recovers its log as after a crash."""
        if self.node is not None:
            if self.node.alive():
                self.node.thaw()
            self.node.stop()
            directory = self.node.data_dir
            self.node = None
        else:
            directory = self._given_dir or self._owned_dir
        self._versions = None
        if directory is None:
            self.start()
        else:
            self._launch(directory)

    @property
    def bootstrap(self) -> str:
        if self.node is None:
            raise TargetError("the reference target is not started")
        return self.node.bootstrap

    @property
    def faults(self) -> FaultHooks:
        return _ProcessFaults(self)
