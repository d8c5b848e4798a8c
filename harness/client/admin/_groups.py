"""The admin calls on groups: ListGroups at every broker, the rest at each group's coordinator."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kconform.codecs.errors import Errors
from kconform.codecs.messages import ConsumerGroupDescribeRequest, DescribeGroupsRequest, ListGroupsRequest

from ..errors import BrokerError, ClientError, NoCommonVersion
from ._checks import check_group_ids, check_partitions
from ._group_requests import (
    CONSUMER_GROUP_DESCRIBE,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    OFFSET_FETCH,
    OFFSET_FETCH_BY_NAME_MAX,
    build_offset_fetch,
    read_classic_group,
    read_committed_offsets,
    read_consumer_group,
    read_group_listings,
)
from ._routing import AdminRouting, Outcome
from ._types import GroupDescription, GroupListing, OffsetAndMetadata

__all__ = ["GroupCalls"]


class GroupCalls(AdminRouting):
    async def list_groups(
        self,
        *,
        states: Iterable[str] | None = None,
        types: Iterable[str] | None = None,
        timeout_ms: int | None = None,
    ) -> list[GroupListing]:
        """Every group on every broker (Java's listGroups / listConsumerGroups), sorted by id. Filters
        need ListGroups v4 (states) and v5 (types); a broker without them fails the call."""
        states = list(states) if states is not None else []
        types = list(types) if types is not None else []
        await self.network.refresh_metadata()
        nodes = sorted(self.network.metadata.brokers)

        async def attempt(pending: list[int]) -> dict[int, Outcome]:
            async def one(node: int) -> Outcome:
                conn = await self.network.connection(node)
                floor = 5 if types else 4 if states else None
                version = conn.version_for(LIST_GROUPS, floor=floor)
                request = ListGroupsRequest(states_filter=states, types_filter=types)
                response = await conn.send(LIST_GROUPS, request, version=version)
                if response.error_code:
                    return {
                        node: self._group_outcome(
                            response.error_code, None, f"ListGroups on node {node}", None
                        )
                    }
                return {node: read_group_listings(response, version)}

            return await self._gather_per_node({n: [n] for n in pending}, lambda n, _keys: one(n))

        per_node = await self._run("ListGroups", nodes, attempt, timeout_ms, True)
        listings = {g.group_id: g for found in per_node.values() for g in found}
        return [listings[g] for g in sorted(listings)]

    async def describe_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None, raise_errors: bool = False
    ) -> dict[str, GroupDescription | ClientError]:
        """Each group described by the API its type calls for, as Java's describeConsumerGroups does:
        ConsumerGroupDescribe first, and DescribeGroups for the groups it says are not consumer groups
        (GROUP_ID_NOT_FOUND) or for every group when the coordinator does not offer it."""
        group_ids = check_group_ids(group_ids)
        results: dict[str, Any] = {}
        classic: list[str] = []
        modern = await self.describe_consumer_groups(group_ids, timeout_ms=timeout_ms)
        for group_id, outcome in modern.items():
            if isinstance(outcome, NoCommonVersion) or (
                isinstance(outcome, BrokerError) and outcome.code == Errors.GROUP_ID_NOT_FOUND
            ):
                classic.append(group_id)
            else:
                results[group_id] = outcome
        if classic:
            for group_id, outcome in (
                await self.describe_classic_groups(classic, timeout_ms=timeout_ms)
            ).items():
                first = modern.get(group_id)
                if (
                    isinstance(outcome, BrokerError)
                    and outcome.code == Errors.GROUP_ID_NOT_FOUND
                    and isinstance(first, BrokerError)
                    and first.code == Errors.GROUP_ID_NOT_FOUND
                ):
                    # Java keeps ConsumerGroupDescribe's message, the more telling one
                    # (DescribeConsumerGroupsHandler.handleError)
                    outcome = first
                results[group_id] = outcome
        ordered = {g: results[g] for g in group_ids}
        return self._maybe_raise(ordered, raise_errors)

    async def describe_classic_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None, raise_errors: bool = False
    ) -> dict[str, GroupDescription | ClientError]:
        """DescribeGroups: classic groups; members of "consumer" protocol groups have their
        subscription and assignment decoded."""
        group_ids = check_group_ids(group_ids)

        async def send(node: int, batch: list[str]) -> dict[str, Outcome]:
            conn = await self.network.connection(node)
            version = conn.version_for(DESCRIBE_GROUPS)
            request = DescribeGroupsRequest(groups=list(batch), include_authorized_operations=False)
            response = await conn.send(DESCRIBE_GROUPS, request, version=version)
            outcomes: dict[str, Outcome] = {}
            for g in response.groups:
                if g.group_id in batch:
                    # v6+ (KIP-1043): an unknown or non-classic group is GROUP_ID_NOT_FOUND with a message
                    message = g.error_message if version >= 6 else None
                    outcome = self._group_outcome(
                        g.error_code, message, f"describe group {g.group_id!r}", g.group_id
                    )
                    outcomes[g.group_id] = outcome if outcome is not None else read_classic_group(g, node)
            return outcomes

        return await self._run_per_coordinator("DescribeGroups", group_ids, send, timeout_ms, raise_errors)

    async def describe_consumer_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None, raise_errors: bool = False
    ) -> dict[str, GroupDescription | ClientError]:
        """ConsumerGroupDescribe (KIP-848): consumer groups only. A coordinator without the API fails
        its groups with NoCommonVersion; a group of another type is GROUP_ID_NOT_FOUND."""
        group_ids = check_group_ids(group_ids)

        async def send(node: int, batch: list[str]) -> dict[str, Outcome]:
            conn = await self.network.connection(node)
            version = conn.version_for(CONSUMER_GROUP_DESCRIBE)
            request = ConsumerGroupDescribeRequest(group_ids=list(batch), include_authorized_operations=False)
            response = await conn.send(CONSUMER_GROUP_DESCRIBE, request, version=version)
            outcomes: dict[str, Outcome] = {}
            for g in response.groups:
                if g.group_id in batch:
                    outcome = self._group_outcome(
                        g.error_code, g.error_message, f"describe consumer group {g.group_id!r}", g.group_id
                    )
                    outcomes[g.group_id] = outcome if outcome is not None else read_consumer_group(g, node)
            return outcomes

        return await self._run_per_coordinator(
            "ConsumerGroupDescribe", group_ids, send, timeout_ms, raise_errors
        )

    async def list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[tuple[str, int]] | None = None,
        *,
        require_stable: bool = False,
        timeout_ms: int | None = None,
    ) -> dict[tuple[str, int], OffsetAndMetadata | None | ClientError]:
        """The group's committed offsets (all of them, or those of ``partitions``). A partition without
        a committed offset maps to None, a partition with an error to its BrokerError; a group-level
        error raises."""
        (group_id,) = check_group_ids([group_id])
        wanted = check_partitions(partitions, "partitions") if partitions is not None else None

        async def send(node: int, _batch: list[str]) -> dict[str, Outcome]:
            conn = await self.network.connection(node)
            # topics by name, so v9 at most (ListConsumerGroupOffsetsHandler: forTopicNames)
            version = conn.version_for(OFFSET_FETCH, cap=OFFSET_FETCH_BY_NAME_MAX)
            if require_stable and version < 7:
                raise NoCommonVersion(
                    f"node {node} offers OffsetFetch v{version}, and require_stable needs v7"
                )
            if wanted is None and version < 2:
                raise NoCommonVersion(f"node {node} offers OffsetFetch v{version}: all offsets need v2")
            request = build_offset_fetch(group_id, wanted, require_stable, version)
            response = await conn.send(OFFSET_FETCH, request, version=version)
            if version >= 8:
                group = next((g for g in response.groups if g.group_id == group_id), None)
                if group is None:
                    return {group_id: ClientError(f"OffsetFetch answer did not mention group {group_id!r}")}
                error_code, topic_results = group.error_code, group.topics
            else:
                error_code = response.error_code if version >= 2 else 0
                topic_results = response.topics
            outcome = self._group_outcome(error_code, None, f"offsets of group {group_id!r}", group_id)
            if outcome is not None:
                return {group_id: outcome}
            return {group_id: read_committed_offsets(topic_results, version)}

        result = await self._run_per_coordinator("OffsetFetch", [group_id], send, timeout_ms, True)
        return result[group_id]
