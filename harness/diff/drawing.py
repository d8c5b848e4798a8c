"""What a differential case is made of: the operations a case may hold, and the Hypothesis strategy that
draws cases (operation sequences). Names inside a case are indexes (topic 0, group 1), so every case is
drawn once and replays on any pair of targets in a namespace of its own."""

from __future__ import annotations

from hypothesis import strategies as st

from . import operations as ops

__all__ = ["OPERATIONS", "check_apis", "drawn_api_keys", "operation_sequences"]

OPERATIONS = {
    cls.__name__: cls
    for cls in (
        ops.CreateTopic,
        ops.Produce,
        ops.Fetch,
        ops.ListOffsets,
        ops.Metadata,
        ops.DeleteRecords,
        ops.FindCoordinator,
        ops.OffsetCommit,
        ops.OffsetFetch,
    )
}

_topic = st.integers(0, 2)
_partition = st.sampled_from([0, 0, 0, 1, 2, -1, 7])
_offset = st.sampled_from([0, 0, 1, 2, 5, -1, 1 << 40])
_pick = st.integers(0, 31)
_epoch = st.sampled_from([-1, -1, -1, 0, 5])  # none, the current one, one from the future
_values = st.lists(st.one_of(st.binary(max_size=20), st.none()), min_size=0, max_size=5).map(tuple)


def _operation(apis: set[int] | None) -> st.SearchStrategy:
    choices = [
        st.builds(ops.CreateTopic, _pick, topic=_topic, partitions=st.sampled_from([1, 1, 2, 3, 0, -1])),
        st.builds(
            ops.Produce,
            _pick,
            topic=_topic,
            partition=_partition,
            values=_values,
            keyed=st.booleans(),
            acks=st.sampled_from([-1, -1, 1, 0, 2]),
            corrupt=st.sampled_from([False] * 7 + [True]),  # a bad CRC now and then
        ),
        st.builds(
            ops.Fetch,
            _pick,
            topic=_topic,
            partition=_partition,
            offset=_offset,
            max_bytes=st.sampled_from([1 << 20, 1, 100]),
            leader_epoch=_epoch,
        ),
        st.builds(
            ops.ListOffsets,
            _pick,
            topic=_topic,
            partition=_partition,
            timestamp=st.sampled_from([-1, -2, -3, ops.BASE_TIMESTAMP, ops.BASE_TIMESTAMP + 3, 0]),
            leader_epoch=_epoch,
        ),
        st.builds(
            ops.Metadata,
            _pick,
            topic_list=st.lists(_topic, max_size=2).map(tuple),
            all_topics=st.sampled_from([False] * 5 + [True]),
        ),
        st.builds(ops.DeleteRecords, _pick, topic=_topic, partition=_partition, offset=_offset),
        st.builds(ops.FindCoordinator, _pick, group=st.integers(0, 1)),
        st.builds(
            ops.OffsetCommit,
            _pick,
            group=st.integers(0, 1),
            topic=_topic,
            partition=_partition,
            offset=_offset,
        ),
        st.builds(ops.OffsetFetch, _pick, group=st.integers(0, 1), topic=_topic, partition=_partition),
    ]
    if apis:
        choices = [c for c, cls in zip(choices, OPERATIONS.values(), strict=True) if cls.api_key in apis]
    return st.one_of(choices)


def drawn_api_keys() -> set[int]:
    """Every API key some operation sends."""
    return {cls.api_key for cls in OPERATIONS.values()}


def check_apis(apis: set[int] | None) -> None:
    """Raises ValueError, naming what can be drawn, when ``apis`` leaves no operation to draw."""
    if apis and not apis & drawn_api_keys():
        from kconform.codecs import api_schema

        names = ", ".join(sorted(api_schema(k).name for k in drawn_api_keys()))
        raise ValueError(
            f"no operation sends {', '.join(api_schema(k).name for k in sorted(apis))}; "
            f"the APIs drawn are {names}"
        )


def operation_sequences(apis: set[int] | None = None, max_ops: int = 8) -> st.SearchStrategy:
    """Cases: a topic is usually created first, then anything goes."""
    check_apis(apis)
    body = st.lists(_operation(apis), min_size=1, max_size=max_ops)
    setup = st.builds(ops.CreateTopic, _pick, topic=st.just(0), partitions=st.sampled_from([1, 3]))
    with_setup = st.tuples(setup, body).map(lambda pair: [pair[0], *pair[1]])
    return st.one_of(with_setup, with_setup, body) if not apis or 19 in apis else body
