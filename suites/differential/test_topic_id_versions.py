"""Versions that name topics by id (Produce v13, Fetch v13+, OffsetCommit and OffsetFetch v10) in the
differential engine: each target gives out its own topic ids, so the engine asks each side's Metadata
and builds each side's request with that side's id. Two reference brokers must then agree exactly,
and every such step must be compared, not skipped."""

from __future__ import annotations

import asyncio

import pytest

from kconform.harness.diff import operations as ops
from kconform.harness.diff.engine import DiffEngine
from kconform.harness.targets.registry import make_target


@pytest.mark.slow
def test_two_reference_brokers_agree_on_the_topic_id_versions():
    # Kafka 4.2 is the first release that serves OffsetCommit and OffsetFetch v10 (4.1 kept them unstable)
    with make_target("reference@kafka=4.3") as a, make_target("reference@kafka=4.2") as b:
        engine = DiffEngine(a, b)
        by_id = {key: engine.version_range(key)[1] for key in ops.TOPIC_IDS_FROM}

        def newest(key: int) -> int:  # the version_pick that lands on the newest shared version
            low, high = engine.version_range(key)
            return high - low

        case = [
            ops.CreateTopic(version_pick=0, topic=0, partitions=1),
            ops.Produce(version_pick=newest(0), topic=0, values=(b"a", b"b")),
            ops.Fetch(version_pick=newest(1), topic=0),
            ops.OffsetCommit(version_pick=newest(8), group=0, topic=0, offset=1),
            ops.OffsetFetch(version_pick=newest(9), group=0, topic=0),
            ops.Produce(version_pick=newest(0), topic=1, values=(b"c",)),  # a topic neither side has
        ]

        async def run():
            try:
                return await engine.run_case(case, "ids")
            finally:
                await engine.close()

        result = asyncio.run(run())
    versions = {exchange_a.api_key: exchange_a.api_version for exchange_a, _ in result.exchanges}
    for key, newest in by_id.items():
        assert versions[key] == newest
        assert newest >= ops.TOPIC_IDS_FROM[key], f"API {key}: the reference broker serves v{newest}"
    assert result.skipped == [] and result.divergences == []
    produce_a, produce_b = result.exchanges[1]
    assert produce_a.tree["responses"][0]["partition_responses"][0]["error_code"] == 0
    unknown_a, _ = result.exchanges[-1]
    assert unknown_a.tree["responses"][0]["partition_responses"][0]["error_code"] != 0
