"""The KIP-848 consumer group protocol from the member's side (Kafka's ConsumerMembershipManager): one
ConsumerGroupHeartbeat loop carries the subscription and what the member owns; the broker answers with
the member epoch and, when it changes, the target assignment. The member reconciles revoke first: it
gives up (and commits) what it must, reports that, and only then takes what is new."""

from __future__ import annotations

import asyncio
import logging
import uuid

from kconform.codecs.messages import ConsumerGroupHeartbeatRequest

from .errors import BrokerError, ClientError
from .network import NetworkClient

__all__ = ["ConsumerGroupMember", "reconcile"]

log = logging.getLogger(__name__)

_HEARTBEAT = 68
_LEAVE_EPOCH, _LEAVE_STATIC_EPOCH = -1, -2


def _new_member_id() -> str:
    return str(uuid.uuid4())


def reconcile(owned: set, target: set) -> tuple[set, set]:
    """(to revoke, to assign): everything not in the target goes first; new partitions come after."""
    return owned - target, target - owned


class ConsumerGroupMember:
    def __init__(
        self,
        client: NetworkClient,
        *,
        group_id: str,
        instance_id: str | None,
        server_assignor: str | None,
        rebalance_timeout_ms: int,
        topics_for_subscription,
        on_assignment,
    ) -> None:
        self.client = client
        self.group_id = group_id
        self.instance_id = instance_id
        self.server_assignor = server_assignor
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.topics_for_subscription = topics_for_subscription
        self.on_assignment = on_assignment
        self.member_id = _new_member_id()  # KIP-1082: from v1 the member names itself
        self.epoch = 0
        self.owned: set[tuple[str, int]] = set()
        self.interval = 0.5
        self.joined = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._sent_subscription: tuple | None = None
        self.rebalances = 0

    async def ensure_active(self) -> None:
        if self._task is not None and self._task.done() and not self._task.cancelled():
            error = self._task.exception()
            self._task = None
            if error is not None:
                raise error
        if self._task is None:
            self._task = asyncio.ensure_future(self._loop())
        if not self.joined.is_set():
            joined = asyncio.ensure_future(self.joined.wait())
            await asyncio.wait({joined, self._task}, return_when=asyncio.FIRST_COMPLETED)
            joined.cancel()
            if self._task.done() and self._task.exception() is not None:
                raise self._task.exception()

    async def _loop(self) -> None:
        while True:
            try:
                answer = await self._heartbeat()
            except ClientError as exc:
                log.debug("heartbeat %s: %s", self.group_id, exc)
                self.client.forget_coordinator(self.group_id)
                await asyncio.sleep(self.client.retry_backoff)
                continue
            await self._handle(answer)
            await asyncio.sleep(self.interval)

    async def _heartbeat(self, epoch: int | None = None):
        node = await self.client.find_coordinator(self.group_id)
        conn = await self.client.connection(node)
        topics = sorted(self.topics_for_subscription())
        subscription = tuple(topics)
        full = self._sent_subscription != subscription or self.epoch == 0
        metadata = self.client.metadata
        owned: dict[bytes, list[int]] = {}
        for topic, partition in self.owned:
            topic_id = metadata.topic_id(topic)
            if topic_id:
                owned.setdefault(topic_id, []).append(partition)
        request = ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=self.epoch if epoch is None else epoch,
            instance_id=self.instance_id,
            rebalance_timeout_ms=self.rebalance_timeout_ms if full else -1,
            subscribed_topic_names=topics if full else None,
            server_assignor=self.server_assignor if full else None,
            topic_partitions=[
                ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=t, partitions=sorted(p))
                for t, p in owned.items()
            ],  # what it owns, every time: acknowledges revocations
        )
        answer = await conn.send(_HEARTBEAT, request, version=conn.version_for(_HEARTBEAT))
        if full and not answer.error_code:
            self._sent_subscription = subscription
        return answer

    async def _handle(self, answer) -> None:
        if answer.error_code:
            error = BrokerError(
                answer.error_code, f"ConsumerGroupHeartbeat {self.group_id}", answer.error_message
            )
            if error.name in ("FENCED_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"):
                lost, self.owned = set(self.owned), set()
                self.epoch = 0
                if error.name == "UNKNOWN_MEMBER_ID":
                    self.member_id = _new_member_id()
                await self.on_assignment(set(), lost, True)
                return
            if error.name in ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS"):
                self.client.forget_coordinator(self.group_id)
                return
            raise error
        self.member_id = answer.member_id or self.member_id
        self.epoch = answer.member_epoch
        if answer.heartbeat_interval_ms > 0:
            self.interval = answer.heartbeat_interval_ms / 1000
        if answer.assignment is not None:
            names = {}
            for t in self.client.metadata.topics.values():
                if t.topic_id:
                    names[t.topic_id] = t.name
            target = set()
            for tp in answer.assignment.topic_partitions:
                name = names.get(tp.topic_id)
                if name is None:
                    await self.client.refresh_metadata()
                    name = self.client.metadata.topic_name(tp.topic_id)
                if name is not None:
                    target |= {(name, p) for p in tp.partitions}
            revoke, assign = reconcile(self.owned, target)
            if revoke:
                self.owned -= revoke
                await self.on_assignment(set(), revoke, False)
            if assign:
                self.owned |= assign
                await self.on_assignment(assign, set(), False)
            self.rebalances += 1
        self.joined.set()

    async def leave(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self.epoch <= 0:
            return  # never joined
        try:
            await self._heartbeat(epoch=_LEAVE_STATIC_EPOCH if self.instance_id else _LEAVE_EPOCH)
        except ClientError as exc:
            log.debug("leave %s: %s", self.group_id, exc)

    @property
    def commit_generation(self) -> tuple[int, str]:
        return self.epoch, self.member_id
