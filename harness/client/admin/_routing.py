"""Where each admin request goes and how it is retried.

Routing: topic creation and deletion to the controller named in metadata (any broker while it names
none), broker-specific configs to that broker and other resources to any broker, group calls to each
group's coordinator, partition calls to each partition's leader.

Retries: each key of a call (a topic, a resource, a group, a partition) ends with an outcome. The
``*_outcome`` functions decide from an error code whether it is final or ``Retry``, as Java's admin
strategies do; ``AdminRouting._run`` tries the pending keys again with the network's exponential backoff
until each is final or the call's timeout passes, which ends it with ``AdminTimedOut``."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kconform.codecs import DecodeError
from kconform.codecs.errors import Errors

from ..errors import BrokerError, ClientError, ConnectionLost, NoCommonVersion, RequestTimedOut
from ..metadata import ClusterMetadata
from ..network import NetworkClient
from ._requests import METADATA, build_metadata
from ._types import ConfigResource

__all__ = [
    "AdminRouting",
    "AdminTimedOut",
    "Outcome",
    "Retry",
    "controller_outcome",
    "group_outcome",
    "leader_outcome",
    "plain_outcome",
]

K = TypeVar("K", bound=Hashable)

# Errors after which a group call looks its coordinator up again (Java's CoordinatorStrategy).
_COORDINATOR_MOVED = {Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE}
_TRANSPORT_ERRORS = (ConnectionLost, RequestTimedOut)


class AdminTimedOut(ClientError):
    """The call's timeout passed while an item was still being retried; ``last_error`` says why."""

    def __init__(self, what: str, last_error: BaseException | None) -> None:
        self.last_error = last_error
        suffix = f"; last error: {last_error}" if last_error is not None else ""
        super().__init__(f"{what} timed out{suffix}")


@dataclass(slots=True)
class Retry:
    """This item should be tried again; ``refresh`` asks for fresh cluster metadata first."""

    cause: BaseException
    refresh: bool = False


Outcome = Any  # a result, a ClientError (final) or a Retry


# ---- what an error code means for the item --------------------------------------------------------


def controller_outcome(code: int, message: str | None, context: str) -> Outcome:
    # Java's controller calls retry only a moved controller and a throttled request; every other
    # error (REQUEST_TIMED_OUT included: the change may still happen) is the item's answer.
    if code == 0:
        return None
    error = BrokerError(code, context, message)
    if code == Errors.NOT_CONTROLLER:
        return Retry(error, refresh=True)
    if code == Errors.THROTTLING_QUOTA_EXCEEDED:
        return Retry(error)
    return error


def plain_outcome(code: int, message: str | None, context: str) -> Outcome:
    return None if code == 0 else BrokerError(code, context, message)


def leader_outcome(code: int, context: str) -> Outcome:
    # Java's ListOffsetsHandler: a moved or missing leader is looked up again, other retriable
    # errors are retried at the same leader, the rest are final.
    if code == 0:
        return None
    error = BrokerError(code, context)
    if error.invalid_metadata:
        return Retry(error, refresh=True)
    if error.retriable:
        return Retry(error)
    return error


def group_outcome(code: int, message: str | None, context: str) -> Outcome:
    """A moved or loading coordinator is retried (``AdminRouting._group_outcome`` also forgets a moved
    one, so the next attempt looks it up again)."""
    if code == 0:
        return None
    error = BrokerError(code, context, message)
    if code in _COORDINATOR_MOVED or code == Errors.COORDINATOR_LOAD_IN_PROGRESS:
        return Retry(error)
    return error


class AdminRouting:
    """The part of ``Admin`` that picks each request's broker and retries until every key is final."""

    network: NetworkClient
    clock: Callable[[], float]
    default_api_timeout_ms: int

    # ---- routing ---------------------------------------------------------------------------------

    async def _connection(self, node: int | None):
        return await (self.network.any_connection() if node is None else self.network.connection(node))

    async def _controller(self):
        """The controller from metadata, or any broker while metadata names none."""
        metadata = self.network.metadata
        node = metadata.controller_id
        if node < 0 or node not in metadata.brokers:
            metadata = await self.network.refresh_metadata()
            node = metadata.controller_id
        if node < 0 or node not in metadata.brokers:
            conn = await self.network.any_connection()
            return conn.node_id, conn
        return node, await self.network.connection(node)

    async def _topic_metadata(self, topics: list[str] | None) -> ClusterMetadata:
        """A MetadataRequest of this call's own (Java's admin does not share the producer's tracked
        topics): ``None`` for every topic, ``[]`` for brokers only."""
        conn = await self.network.any_connection()
        version = conn.version_for(METADATA)
        if version == 0 and topics is not None and not topics:
            raise NoCommonVersion(f"node {conn.node_id} offers Metadata v0, which cannot ask for no topics")
        response = await conn.send(METADATA, build_metadata(topics, version), version=version)
        return ClusterMetadata.from_response(response, None, merge=False)

    def _learn_brokers(self, metadata: ClusterMetadata) -> None:
        """Leaders named by this call's metadata must be reachable through the network client."""
        known = self.network.metadata
        if all(b in known.brokers for b in metadata.brokers):
            return
        brokers = {**known.brokers, **metadata.brokers}
        self.network.metadata = ClusterMetadata(brokers, known.topics, known.cluster_id, known.controller_id)

    def _group_outcome(self, code: int, message: str | None, context: str, group_id: str | None) -> Outcome:
        if group_id is not None and code in _COORDINATOR_MOVED:
            self.network.forget_coordinator(group_id)
        return group_outcome(code, message, context)

    # ---- the drivers -----------------------------------------------------------------------------

    def _timeout_ms(self, timeout_ms: int | None) -> int:
        return self.default_api_timeout_ms if timeout_ms is None else timeout_ms

    @staticmethod
    def _maybe_raise(results: dict, raise_errors: bool) -> dict:
        if raise_errors:
            for outcome in results.values():
                if isinstance(outcome, BaseException):
                    raise outcome
        return results

    async def _run(
        self,
        what: str,
        keys: list[K],
        attempt: Callable[[list[K]], Awaitable[dict[K, Outcome]]],
        timeout_ms: int | None,
        raise_errors: bool,
    ) -> dict[K, Any]:
        """Call ``attempt`` with the keys still pending until each has a final outcome or the call's
        timeout passes. A dropped connection retries every key of the attempt; a key the answer left
        out is an error, as in Java."""
        deadline = self.clock() + self._timeout_ms(timeout_ms) / 1000
        results: dict[K, Any] = {}
        pending = list(keys)
        attempts = 0
        while pending:
            try:
                outcomes = await attempt(pending)
            except _TRANSPORT_ERRORS as exc:
                outcomes = {k: Retry(exc, refresh=True) for k in pending}
            except (NoCommonVersion, DecodeError) as exc:  # DecodeError: an answer the codecs cannot read
                outcomes = {k: exc for k in pending}
            except BrokerError as exc:  # e.g. FindCoordinator's own final error
                outcomes = {k: Retry(exc) if exc.retriable else exc for k in pending}
            retry, refresh = [], False
            for key in pending:
                outcome = outcomes.get(key, ClientError(f"the {what} answer did not mention {key!r}"))
                results[key] = outcome  # a Retry stays only until the next attempt or the timeout
                if isinstance(outcome, Retry):
                    retry.append(key)
                    refresh |= outcome.refresh
            pending = retry
            if not pending:
                break
            remaining = deadline - self.clock()
            if remaining <= 0:
                for key in pending:
                    results[key] = AdminTimedOut(what, results[key].cause)
                break
            await asyncio.sleep(min(self.network.backoff.backoff_ms(attempts) / 1000, remaining))
            attempts += 1
            if refresh:
                try:
                    await self.network.refresh_metadata()
                except _TRANSPORT_ERRORS:
                    pass  # the next attempt meets the same trouble and says so
        ordered = {k: results[k] for k in keys}
        return self._maybe_raise(ordered, raise_errors)

    async def _gather_per_node(
        self,
        groups: Mapping[int | None, list[K]],
        send: Callable[[int | None, list[K]], Awaitable[Any]],
    ) -> dict[K, Outcome]:
        """Send each node its keys at once; ``send`` answers with an outcome per key. A node's lost
        connection retries that node's keys; a node that lacks the API, or answers what the codecs
        cannot read, fails its keys."""
        nodes = list(groups)
        answers = await asyncio.gather(*(send(n, groups[n]) for n in nodes), return_exceptions=True)
        outcomes: dict[K, Outcome] = {}
        for node, answer in zip(nodes, answers, strict=True):
            keys = groups[node]
            if isinstance(answer, _TRANSPORT_ERRORS):
                if node is not None:
                    self.network.disconnect(node)
                outcomes.update({k: Retry(answer, refresh=True) for k in keys})
            elif isinstance(answer, (NoCommonVersion, DecodeError)):
                outcomes.update({k: answer for k in keys})
            elif isinstance(answer, BrokerError):
                outcomes.update({k: Retry(answer) if answer.retriable else answer for k in keys})
            elif isinstance(answer, BaseException):
                raise answer
            else:
                outcomes.update(answer)
        return outcomes

    async def _run_per_config_node(self, what, resources, send, timeout_ms, raise_errors):
        async def attempt(pending: list[ConfigResource]) -> dict[ConfigResource, Outcome]:
            groups: dict[int | None, list[ConfigResource]] = defaultdict(list)
            for r in pending:
                groups[int(r.name) if r.is_broker_specific else None].append(r)
            return await self._gather_per_node(groups, send)

        return await self._run(what, resources, attempt, timeout_ms, raise_errors)

    async def _run_per_coordinator(self, what, group_ids, send, timeout_ms, raise_errors):
        deadline = self.clock() + self._timeout_ms(timeout_ms) / 1000

        async def attempt(pending: list[str]) -> dict[str, Outcome]:
            groups: dict[int, list[str]] = defaultdict(list)
            outcomes: dict[str, Outcome] = {}
            remaining = max(0.0, deadline - self.clock())
            found = await asyncio.gather(
                *(self.network.find_coordinator(g, 0, timeout=remaining) for g in pending),
                return_exceptions=True,
            )
            for group_id, node in zip(pending, found, strict=True):
                if isinstance(node, _TRANSPORT_ERRORS):
                    outcomes[group_id] = Retry(node, refresh=True)
                elif isinstance(node, BrokerError):
                    outcomes[group_id] = Retry(node) if node.retriable else node
                elif isinstance(node, (NoCommonVersion, DecodeError)):
                    outcomes[group_id] = node
                elif isinstance(node, BaseException):
                    raise node
                else:
                    groups[node].append(group_id)
            outcomes.update(await self._gather_per_node(groups, send))
            return outcomes

        return await self._run(what, group_ids, attempt, timeout_ms, raise_errors)

    async def _run_per_leader(self, what, keys, send, timeout_ms, raise_errors):
        async def attempt(pending: list[tuple[str, int]]) -> dict[tuple[str, int], Outcome]:
            metadata = await self._topic_metadata(sorted({t for t, _ in pending}))
            outcomes: dict[tuple[str, int], Outcome] = {}
            groups: dict[int, list[tuple[str, int]]] = defaultdict(list)
            for key in pending:
                topic, partition = key
                info = metadata.topics.get(topic)
                if info is None:
                    outcomes[key] = Retry(ClientError(f"metadata did not mention topic {topic}"))
                elif info.error_code in (Errors.LEADER_NOT_AVAILABLE, Errors.BROKER_NOT_AVAILABLE):
                    outcomes[key] = Retry(BrokerError(info.error_code, f"metadata of {topic}"))
                elif info.error_code:
                    # Java's PartitionLeaderStrategy: an unknown topic fails at once.
                    outcomes[key] = BrokerError(info.error_code, f"metadata of {topic}")
                elif partition not in info.partitions:
                    # Java keeps looking until the timeout; a partition missing from a topic that
                    # answered cleanly will not appear by waiting, so it fails now.
                    outcomes[key] = BrokerError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition}")
                else:
                    part = info.partitions[partition]
                    if part.error_code:
                        outcomes[key] = Retry(
                            BrokerError(part.error_code, f"metadata of {topic}-{partition}")
                        )
                    elif part.leader < 0:
                        outcomes[key] = Retry(
                            BrokerError(Errors.LEADER_NOT_AVAILABLE, f"{topic}-{partition}")
                        )
                    else:
                        groups[part.leader].append(key)
            if metadata.brokers:
                self._learn_brokers(metadata)
            outcomes.update(await self._gather_per_node(groups, send))
            return outcomes

        return await self._run(what, keys, attempt, timeout_ms, raise_errors)
