"""What a rule's check talks to a target through: one test's own names (topics, groups, transactional
ids, so that tests never meet on a long-lived target), raw connections to the node that leads a
partition or coordinates a group, and the set-up steps most rules share.

Set-up goes through the reference client (create a topic and wait until every broker knows it); a
target that serves no CreateTopics (librdkafka's mock) may give its own way to make a topic with default
configs, which is used then, since the rule is about another API. The request a rule is about goes
through a raw connection at the version under test, so the check sees the answer exactly as the target
gave it, or the closed connection or the silence instead; an answer that does not decode fails the
rule (Kafka's always does)."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Callable
from typing import Any

from kconform.codecs import DecodeError
from kconform.codecs.constants import ZERO_UUID
from kconform.codecs.errors import Errors, error_for
from kconform.codecs.messages import CreateTopicsRequest

from ..client.errors import BrokerError
from ..client.network import NetworkClient, parse_bootstrap
from ..client.raw import RawClient, Reply
from .catalogue import RuleFailed
from .requests import metadata_request

__all__ = ["RuleSession", "SetupFailed"]

_FETCH, _METADATA, _CREATE_TOPICS = 1, 3, 19
_TIMEOUT_S = 10.0


class SetupFailed(RuntimeError):
    """A step before the rule's own request failed: the rule could not be checked (an error, not a
    failure of the rule)."""


class RuleSession:
    def __init__(
        self,
        bootstrap: str,
        test_id: str,
        versions: dict[int, tuple[int, int]],
        topic_aside: Callable[[str, int], None] | None = None,
        setup_caps: dict[int, int] | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.versions = versions  # what the target advertises, by API key
        self._topic_aside = topic_aside  # the target's own way to make a topic, outside the protocol
        self._prefix = f"kc{uuid.uuid4().hex[:6]}-{test_id}"[:120]
        self._counter = itertools.count()
        # set-up stays below versions a target is known to answer in a form that does not decode
        self._setup_caps = dict(setup_caps or {})
        self._client = NetworkClient(bootstrap, version_caps=self._setup_caps)
        self._raw: list[RawClient] = []

    # ---- names ----------------------------------------------------------------------------------

    def name(self, kind: str = "t") -> str:
        """A name no other test uses (topic, group, transactional id)."""
        return f"{self._prefix}-{kind}{next(self._counter)}"

    # ---- connections ----------------------------------------------------------------------------

    async def raw(self, node: int | None = None) -> RawClient:
        """A raw connection to ``node`` (any broker when None), closed with the session."""
        if node is None:
            host, port = parse_bootstrap(self.bootstrap)[0]
        else:
            await self._client.refresh_metadata()
            broker = self._client.metadata.brokers[node]
            host, port = broker.host, broker.port
        client = await RawClient.connect(host, port, timeout=_TIMEOUT_S)
        self._raw.append(client)
        return client

    async def leader(self, topic: str, partition: int = 0) -> RawClient:
        """A raw connection to the broker that leads ``topic``-``partition``."""
        await self._client.wait_for_topic(topic, _TIMEOUT_S)
        return await self.raw(self._client.metadata.leader_for(topic, partition))

    async def coordinator(self, key: str, key_type: int = 0) -> RawClient:
        """A raw connection to the group (0) or transaction (1) coordinator of ``key``."""
        return await self.raw(await self._client.find_coordinator(key, key_type, timeout=_TIMEOUT_S))

    async def call(self, client: RawClient, api_key: int, version: int, body: Any) -> Any:
        """The decoded answer; a closed connection or silence fails the rule (Kafka answers)."""
        try:
            reply = await client.request(api_key, version, body, timeout=_TIMEOUT_S)
        except DecodeError as exc:
            raise RuleFailed("fate", "an answer that decodes", f"one that does not: {exc}") from None
        if not reply.answered:
            raise RuleFailed("fate", "answered", reply.fate.value)
        return reply.body

    async def request(self, client: RawClient, api_key: int, version: int, body: Any) -> Reply:
        return await client.request(api_key, version, body, timeout=_TIMEOUT_S)

    # ---- set-up ---------------------------------------------------------------------------------

    async def create_topic(
        self, partitions: int = 1, name: str | None = None, **configs: str
    ) -> tuple[str, Any]:
        """A topic of this test's own (one replica), known to every broker; its name and id."""
        name = name or self.name("t")
        topic = CreateTopicsRequest.CreatableTopic(
            name=name,
            num_partitions=partitions,
            replication_factor=-1,
            configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
        )
        try:
            if _CREATE_TOPICS not in self.versions and self._topic_aside is not None:
                if configs:
                    raise SetupFailed(
                        "the target serves no CreateTopics, and its own way to make a topic takes no configs"
                    )
                await asyncio.to_thread(self._topic_aside, name, partitions)
            else:
                body = await self._client.send_any(
                    _CREATE_TOPICS, CreateTopicsRequest(topics=[topic], timeout_ms=int(_TIMEOUT_S * 1000))
                )
                result = body.topics[0]
                if result.error_code != Errors.NONE:
                    raise BrokerError(result.error_code, f"creating topic {name}", result.error_message)
            await self._client.wait_for_topic(name, _TIMEOUT_S)
            await self._known_everywhere(name, partitions)
        except Exception as exc:
            raise SetupFailed(f"creating topic {name} with {configs or 'defaults'}: {exc}") from exc
        return name, self._client.metadata.topic_id(name)

    def setup_version(self, api_key: int, cap: int) -> int:
        """The version a set-up step (not the request a rule is about) asks ``api_key`` at: the newest the
        target serves, at most ``cap`` and below any version it is known to answer undecodably."""
        return min(self.versions[api_key][1], cap, self._setup_caps.get(api_key, cap))

    def read_back_version(self, topic_id) -> int:
        """The Fetch version a rule reads its own writes back at: the newest the target serves, below v13
        when the topic's id is not known (FetchRequest.Builder's rule: then it fetches by name)."""
        newest = self.versions[_FETCH][1]
        return newest if topic_id not in (None, ZERO_UUID) else min(newest, 12)

    async def _known_everywhere(self, topic: str, partitions: int) -> None:
        """Wait until every broker's own Metadata answer has every partition of ``topic`` with a leader,
        as Kafka's tests do (TestUtils.waitForAllPartitionsMetadata): metadata reaches the brokers of a
        cluster one by one, and a rule asking a broker that has not seen it yet would test the race."""
        version = self.setup_version(_METADATA, 12)
        deadline = time.monotonic() + _TIMEOUT_S
        for node in list(self._client.metadata.brokers):
            client = await self.raw(node)
            while True:
                reply = await client.request(_METADATA, version, metadata_request(topic), timeout=_TIMEOUT_S)
                if not reply.answered:
                    raise ConnectionError(f"broker {node} did not answer Metadata: {reply.fate.value}")
                if _has_every_leader(reply.body, topic, partitions):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"broker {node} has not learnt of {topic} within {_TIMEOUT_S:g}s")
                await asyncio.sleep(0.05)

    async def close(self) -> None:
        for client in self._raw:
            await client.close()
        await self._client.close()


def _has_every_leader(body, topic: str, partitions: int) -> bool:
    for described in body.topics:
        if described.name == topic and described.error_code == Errors.NONE:
            leaders = [p.leader_id for p in described.partitions]
            return len(leaders) == partitions and min(leaders, default=-1) >= 0
    return False


def expect(field_path: str, got, expected, note: str = "") -> None:
    """Fail the rule unless ``got`` is what Kafka gives."""
    if got != expected:
        raise RuleFailed(field_path, expected, got, note)


def expect_error(field_path: str, got: int, expected: int) -> None:
    """Fail the rule unless the error code is ``expected``, both named in the failure."""
    if got != expected:
        raise RuleFailed(field_path, _error_name(expected), _error_name(got))


def _error_name(code: int) -> str:
    return error_for(code).name
