"""The admin calls on topics: CreateTopics and DeleteTopics at the controller, Metadata for the rest."""

from __future__ import annotations

from collections.abc import Iterable

from kconform.codecs.errors import Errors

from ..errors import BrokerError, ClientError, NoCommonVersion
from ._checks import check_new_topic, check_topic_name, check_unique
from ._requests import (
    CREATE_TOPICS,
    DELETE_TOPICS,
    build_create_topics,
    build_delete_topics,
    read_created_topic,
    read_topic_description,
    read_topic_listings,
)
from ._routing import AdminRouting, Outcome, Retry, controller_outcome
from ._types import CreatedTopic, NewTopic, TopicDescription, TopicListing

__all__ = ["TopicCalls"]


class TopicCalls(AdminRouting):
    async def create_topics(
        self,
        topics: Iterable[NewTopic],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
        raise_errors: bool = False,
    ) -> dict[str, CreatedTopic | ClientError]:
        topics = list(topics)
        for t in topics:
            check_new_topic(t)
        check_unique([t.name for t in topics], "topic")
        by_name = {t.name: t for t in topics}
        request_timeout_ms = self._timeout_ms(timeout_ms)

        async def attempt(names: list[str]) -> dict[str, Outcome]:
            request = build_create_topics([by_name[n] for n in names], request_timeout_ms, validate_only)
            node, conn = await self._controller()
            version = conn.version_for(CREATE_TOPICS)
            if validate_only and version < 1:
                raise NoCommonVersion(f"node {node} offers CreateTopics v0 only, which cannot validate_only")
            response = await conn.send(CREATE_TOPICS, request, version=version)
            outcomes: dict[str, Outcome] = {}
            for r in response.topics:
                if r.name not in by_name:
                    continue
                outcomes[r.name] = controller_outcome(r.error_code, r.error_message, f"create {r.name}")
                if outcomes[r.name] is None:
                    outcomes[r.name] = read_created_topic(r, version)
            return outcomes

        return await self._run("CreateTopics", list(by_name), attempt, timeout_ms, raise_errors)

    async def delete_topics(
        self, names: Iterable[str], *, timeout_ms: int | None = None, raise_errors: bool = False
    ) -> dict[str, None | ClientError]:
        names = list(names)
        for name in names:
            check_topic_name(name)
        check_unique(names, "topic")
        request_timeout_ms = self._timeout_ms(timeout_ms)

        async def attempt(pending: list[str]) -> dict[str, Outcome]:
            node, conn = await self._controller()
            version = conn.version_for(DELETE_TOPICS)
            request = build_delete_topics(pending, request_timeout_ms, version)
            response = await conn.send(DELETE_TOPICS, request, version=version)
            outcomes: dict[str, Outcome] = {}
            for r in response.responses:
                if r.name in pending:
                    message = r.error_message if version >= 5 else None
                    outcomes[r.name] = controller_outcome(r.error_code, message, f"delete {r.name}")
            return outcomes

        return await self._run("DeleteTopics", names, attempt, timeout_ms, raise_errors)

    async def describe_topics(
        self, names: Iterable[str], *, timeout_ms: int | None = None, raise_errors: bool = False
    ) -> dict[str, TopicDescription | ClientError]:
        names = list(names)
        for name in names:
            check_topic_name(name)
        check_unique(names, "topic")

        async def attempt(pending: list[str]) -> dict[str, Outcome]:
            metadata = await self._topic_metadata(pending)
            outcomes: dict[str, Outcome] = {}
            for name in pending:
                info = metadata.topics.get(name)
                if info is None:
                    outcomes[name] = Retry(ClientError(f"metadata did not mention topic {name}"))
                elif info.error_code == Errors.LEADER_NOT_AVAILABLE:
                    outcomes[name] = Retry(BrokerError(info.error_code, f"describe {name}"))  # being created
                elif info.error_code:
                    outcomes[name] = BrokerError(info.error_code, f"describe {name}")
                else:
                    outcomes[name] = read_topic_description(info)
            return outcomes

        return await self._run("DescribeTopics", names, attempt, timeout_ms, raise_errors)

    async def list_topics(
        self, *, include_internal: bool = False, timeout_ms: int | None = None
    ) -> dict[str, TopicListing]:
        async def attempt(keys: list[str]) -> dict[str, Outcome]:
            metadata = await self._topic_metadata(None)
            return {"topics": read_topic_listings(metadata, include_internal)}

        result = await self._run("ListTopics", ["topics"], attempt, timeout_ms, True)
        return result["topics"]
