"""A broker's standing with the controller (Kafka's ``BrokerLifecycleManager``): it registers (a new
incarnation id per process start, its listeners, rack and the epoch it had if it last shut down
cleanly), then heartbeats every ``broker.heartbeat.interval.ms`` with the offset of the metadata it
has applied. It asks to stay fenced until it is ready to serve; the controller unfences it once its
metadata has caught up. A heartbeat answered STALE_BROKER_EPOCH (the controller forgot it) registers
again. A controlled shutdown heartbeats ``want_shut_down`` until the controller has moved its
leaderships away and answers ``should_shut_down``.

On a clean stop the broker epoch is written to ``.kafka_cleanshutdown`` in the data directory, as
Kafka's broker does, so the next registration can say the shutdown was clean (KIP-966)."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable
from pathlib import Path

from kconform.codecs.errors import Errors
from kconform.codecs.messages import BrokerHeartbeatRequest, BrokerRegistrationRequest

__all__ = ["BrokerLifecycle", "RegistrationFailed"]

log = logging.getLogger(__name__)
BROKER_REGISTRATION, BROKER_HEARTBEAT = 62, 63
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
_RETRY_S = 0.1


class RegistrationFailed(RuntimeError):
    """The controller refused the registration for a reason waiting will not fix."""


class BrokerLifecycle:
    def __init__(
        self,
        *,
        node_id: int,
        cluster_id: str,
        data_dir: Path,
        rack: str | None,
        listeners: Callable[[], list[tuple[str, str, int, int]]],
        metadata_offset: Callable[[], int],
        send,
        heartbeat_interval_s: float,
        request_timeout_s: float,
    ) -> None:
        self.node_id = node_id
        self._cluster_id = cluster_id
        self._clean_shutdown_file = Path(data_dir) / CLEAN_SHUTDOWN_FILE
        self._rack = rack
        self._listeners = listeners  # (name, host, port, security protocol id) of each advertised listener
        self._metadata_offset = metadata_offset
        self._send = send
        self._interval_s = heartbeat_interval_s
        self._timeout_s = request_timeout_s
        self.incarnation_id = uuid.uuid4()
        self.directory_id = uuid.uuid4()
        self.epoch = -1
        self.fenced = True
        self.caught_up = False
        self.ready_to_unfence = False
        self.shutting_down = False
        self.may_shut_down = False
        self._previous_epoch = self._read_clean_shutdown()
        self._beat = asyncio.Event()
        self._answered = asyncio.Event()
        self._task: asyncio.Task | None = None

    def _read_clean_shutdown(self) -> int:
        """The epoch of the last clean shutdown, once: the file is removed so that a crash after this
        start is not taken for a clean one."""
        try:
            epoch = int(json.loads(self._clean_shutdown_file.read_text())["brokerEpoch"])
        except (OSError, ValueError, KeyError, TypeError):
            return -1
        self._clean_shutdown_file.unlink(missing_ok=True)
        return epoch

    def write_clean_shutdown(self) -> None:
        if self.epoch >= 0:
            self._clean_shutdown_file.write_text(json.dumps({"version": 0, "brokerEpoch": self.epoch}))

    # ---- registration ---------------------------------------------------------------------------

    async def register(self, deadline_s: float) -> None:
        """Register, retrying while the controller cannot be reached or still holds the previous
        incarnation's session; RegistrationFailed for an answer that will not change, or at the
        deadline (``initial.broker.registration.timeout.ms``)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline_s
        last = "no answer"
        while loop.time() < end:
            request = BrokerRegistrationRequest(
                broker_id=self.node_id,
                cluster_id=self._cluster_id,
                incarnation_id=self.incarnation_id,
                listeners=[
                    BrokerRegistrationRequest.Listener(
                        name=name, host=host, port=port, security_protocol=kind
                    )
                    for name, host, port, kind in self._listeners()
                ],
                features=[],
                rack=self._rack,
                is_migrating_zk_broker=False,
                log_dirs=[self.directory_id],
                previous_broker_epoch=self._previous_epoch,
            )
            try:
                response = await self._send(BROKER_REGISTRATION, request, timeout_s=self._timeout_s)
            except ConnectionError as exc:
                last = str(exc)
            else:
                if response.error_code == Errors.NONE:
                    self.epoch = response.broker_epoch
                    log.info("broker %d registered with epoch %d", self.node_id, self.epoch)
                    return
                if response.error_code == Errors.INCONSISTENT_CLUSTER_ID:
                    raise RegistrationFailed(
                        f"the controller's cluster is not this data directory's ({self._cluster_id})"
                    )
                last = f"error {response.error_code}"
            await asyncio.sleep(_RETRY_S)
        raise RegistrationFailed(f"broker {self.node_id} could not register with the controller: {last}")

    # ---- heartbeats -----------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.create_task(self._heartbeats(), name=f"broker-{self.node_id}-heartbeats")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def beat_now(self) -> None:
        self._beat.set()

    async def heartbeat(self) -> None:
        request = BrokerHeartbeatRequest(
            broker_id=self.node_id,
            broker_epoch=self.epoch,
            current_metadata_offset=self._metadata_offset(),
            want_fence=not self.ready_to_unfence,
            want_shut_down=self.shutting_down,
            offline_log_dirs=[],
        )
        response = await self._send(BROKER_HEARTBEAT, request, timeout_s=self._timeout_s)
        if response.error_code == Errors.STALE_BROKER_EPOCH:
            log.warning(
                "broker %d: the controller no longer knows epoch %d; registering again",
                self.node_id,
                self.epoch,
            )
            self.incarnation_id = uuid.uuid4()
            await self.register(deadline_s=self._timeout_s)
            return
        if response.error_code != Errors.NONE:
            log.warning("broker %d heartbeat: error %d", self.node_id, response.error_code)
            return
        self.caught_up = response.is_caught_up
        self.fenced = response.is_fenced
        self.may_shut_down = response.should_shut_down
        self._answered.set()

    async def _heartbeats(self) -> None:
        while True:
            try:
                await self.heartbeat()
            except ConnectionError as exc:
                log.info("broker %d heartbeat not delivered: %s", self.node_id, exc)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("broker %d heartbeat failed", self.node_id)
            self._beat.clear()
            interval = 0.05 if self.shutting_down or self.fenced else self._interval_s
            try:
                await asyncio.wait_for(self._beat.wait(), interval)
            except TimeoutError:
                pass

    async def wait_until(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout_s
        while not condition():
            remaining = end - loop.time()
            if remaining <= 0:
                return False
            self._answered.clear()
            self.beat_now()
            try:
                await asyncio.wait_for(self._answered.wait(), min(remaining, self._interval_s))
            except TimeoutError:
                pass
        return True

    async def controlled_shutdown(self, timeout_s: float) -> bool:
        """Ask to shut down and wait until the controller agrees (True) or the time is up (False)."""
        if self.fenced:
            return True
        self.shutting_down = True
        return await self.wait_until(lambda: self.may_shut_down, timeout_s)
