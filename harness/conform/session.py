"""What a rule's check talks to a target through: one test's own names (topics, groups, transactional
ids, so that tests never meet on a long-lived target), raw connections to the node that leads a
partition or coordinates a group, and the set-up steps most rules share.

Set-up goes through the reference client (create a topic and wait until every broker knows it); the
request a rule is about goes through a raw connection at the version under test, so the check sees the
answer exactly as the target gave it, or the closed connection or the silence instead."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from typing import Any

from kconform.codecs.errors import Errors, error_for
from kconform.codecs.messages import CreateTopicsRequest

from ..client.errors import BrokerError
from ..client.network import NetworkClient, parse_bootstrap
from ..client.raw import RawClient, Reply
from .catalogue import RuleFailed
from .requests import metadata_request

__all__ = ["RuleSession", "SetupFailed"]

_METADATA, _CREATE_TOPICS = 3, 19
_TIMEOUT_S = 10.0


class SetupFailed(RuntimeError):
    """A step before the rule's own request failed: the rule could not be checked (an error, not a
    failure of the rule)."""


class RuleSession:
    def __init__(self, bootstrap: str, test_id: str, versions: dict[int, tuple[int, int]]) -> None:
        self.bootstrap = bootstrap
        self.versions = versions  # what the target advertises, by API key
        self._prefix = f"kc{uuid.uuid4().hex[:6]}-{test_id}"[:120]
        self._counter = itertools.count()
        self._client = NetworkClient(bootstrap)
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
        reply = await client.request(api_key, version, body, timeout=_TIMEOUT_S)
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

    async def _known_everywhere(self, topic: str, partitions: int) -> None:
        """Wait until every broker's own Metadata answer has every partition of ``topic`` with a leader,
        as Kafka's tests do (TestUtils.waitForAllPartitionsMetadata): metadata reaches the brokers of a
        cluster one by one, and a rule asking a broker that has not seen it yet would test the race."""
        version = min(self.versions.get(_METADATA, (0, 0))[1], 12)
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
