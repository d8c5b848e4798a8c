"""The admin calls on partitions' records: ListOffsets and DeleteRecords at each partition's leader."""

from __future__ import annotations

from collections.abc import Mapping

from kconform.codecs.constants import IsolationLevel

from ..errors import ClientError, NoCommonVersion
from ._checks import check_partitions
from ._requests import (
    DELETE_RECORDS,
    LIST_OFFSETS,
    build_delete_records,
    build_list_offsets,
    read_listed_offset,
)
from ._routing import AdminRouting, Outcome, leader_outcome
from ._types import ListOffsetsResult, OffsetSpec

__all__ = ["PartitionCalls"]


class PartitionCalls(AdminRouting):
    async def list_offsets(
        self,
        specs: Mapping[tuple[str, int], OffsetSpec],
        *,
        isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
        timeout_ms: int | None = None,
        raise_errors: bool = False,
    ) -> dict[tuple[str, int], ListOffsetsResult | ClientError]:
        keys = check_partitions(specs, "list_offsets")
        for key in keys:
            if not isinstance(specs[key], OffsetSpec):
                raise ValueError(f"list_offsets: {specs[key]!r} for {key} is not an OffsetSpec")
        request_timeout_ms = self._timeout_ms(timeout_ms)

        async def send(node: int, batch: list[tuple[str, int]]) -> dict[tuple[str, int], Outcome]:
            conn = await self.network.connection(node)
            # v1 is the oldest that answers one offset with its timestamp; a spec or read_committed that
            # needs a newer version than the leader offers fails alone, the rest go (as Java does).
            version = conn.version_for(LIST_OFFSETS, floor=1)
            outcomes: dict[tuple[str, int], Outcome] = {}
            sendable = []
            for key in batch:
                needed = max(specs[key].min_version, 2 if isolation_level else 1)
                if needed > version:
                    outcomes[key] = NoCommonVersion(
                        f"node {node} offers ListOffsets up to v{version}; {specs[key]} needs v{needed}"
                    )
                else:
                    sendable.append(key)
            if not sendable:
                return outcomes
            request = build_list_offsets({k: specs[k] for k in sendable}, isolation_level, request_timeout_ms)
            response = await conn.send(LIST_OFFSETS, request, version=version)
            for t in response.topics:
                for p in t.partitions:
                    key = (t.name, p.partition_index)
                    if key not in specs:
                        continue
                    if p.error_code:
                        outcomes[key] = leader_outcome(
                            p.error_code, f"offset of {t.name}-{p.partition_index}"
                        )
                    else:
                        outcomes[key] = read_listed_offset(p, version)
            return outcomes

        return await self._run_per_leader("ListOffsets", keys, send, timeout_ms, raise_errors)

    async def delete_records(
        self,
        before: Mapping[tuple[str, int], int],
        *,
        timeout_ms: int | None = None,
        raise_errors: bool = False,
    ) -> dict[tuple[str, int], int | ClientError]:
        """Move each partition's log start offset up to ``before[(topic, partition)]`` (-1: the high
        watermark); each result is the new low watermark."""
        keys = check_partitions(before, "delete_records")
        for key in keys:
            if not isinstance(before[key], int) or before[key] < -1:
                raise ValueError(f"delete_records: offset {before[key]!r} for {key} is not an offset or -1")
        request_timeout_ms = self._timeout_ms(timeout_ms)

        async def send(node: int, batch: list[tuple[str, int]]) -> dict[tuple[str, int], Outcome]:
            conn = await self.network.connection(node)
            version = conn.version_for(DELETE_RECORDS)
            request = build_delete_records(batch, before, request_timeout_ms)
            response = await conn.send(DELETE_RECORDS, request, version=version)
            outcomes: dict[tuple[str, int], Outcome] = {}
            for t in response.topics:
                for p in t.partitions:
                    key = (t.name, p.partition_index)
                    if key in before:
                        outcome = leader_outcome(
                            p.error_code, f"delete records of {t.name}-{p.partition_index}"
                        )
                        outcomes[key] = p.low_watermark if outcome is None else outcome
            return outcomes

        return await self._run_per_leader("DeleteRecords", keys, send, timeout_ms, raise_errors)
