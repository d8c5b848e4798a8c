"""Kafka's topic config names and defaults, the text files next to the segments, and ListOffsets'
special timestamps."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kconform.reference_broker.storage import (
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    LONG_MAX,
    MAX_TIMESTAMP,
    CorruptCheckpoint,
    LogConfig,
    TimestampAndOffset,
)
from kconform.reference_broker.storage._checkpoints import (
    read_leader_epochs,
    read_offset_checkpoint,
    read_topic_id,
    write_offset_checkpoint,
    write_topic_id,
)
from kconform.reference_broker.storage._loader import parse_partition_dir_name


def test_defaults_are_kafkas():
    config = LogConfig()
    assert (config.segment_bytes, config.segment_ms, config.retention_ms) == (
        1073741824,
        604800000,
        604800000,
    )
    assert (config.retention_bytes, config.index_interval_bytes, config.segment_index_bytes) == (
        -1,
        4096,
        10485760,
    )
    assert (config.flush_messages, config.flush_ms) == (LONG_MAX, LONG_MAX)
    assert config.file_delete_delay_ms == 60000 and config.delete_enabled


def test_topic_configs_map_by_kafka_name():
    config = LogConfig.from_topic_configs(
        {
            "segment.bytes": "1048576",
            "retention.ms": "-1",
            "cleanup.policy": "compact,delete",
            "max.message.bytes": "100",  # not the log's business: ignored
        }
    )
    assert (config.segment_bytes, config.retention_ms, config.delete_enabled) == (1048576, -1, True)
    assert not LogConfig.from_topic_configs({"cleanup.policy": "compact"}).delete_enabled
    with pytest.raises(ValueError):
        LogConfig.from_topic_configs({"segment.ms": "soon"})
    with pytest.raises(ValueError):
        LogConfig(segment_bytes=0)
    with pytest.raises(ValueError):
        LogConfig(retention_bytes=-2)


def test_partition_directories_are_named_topic_dash_partition():
    assert parse_partition_dir_name(Path("/data/my-topic-12")) == ("my-topic", 12)
    for bad in ("topic", "topic-", "-3", "topic-x"):
        with pytest.raises(ValueError):
            parse_partition_dir_name(Path(bad))


def test_offset_checkpoints(tmp_path):
    path = tmp_path / "log-start-offset-checkpoint"
    assert read_offset_checkpoint(path, "t", 0) is None
    write_offset_checkpoint(path, "t", 3, 42)
    assert path.read_text() == "0\n1\nt 3 42\n"
    assert read_offset_checkpoint(path, "t", 3) == 42
    assert read_offset_checkpoint(path, "t", 4) is None
    for broken in ("1\n1\nt 3 42\n", "0\n2\nt 3 42\n", "0\n1\nt 3\n", "x\n"):
        path.write_text(broken)
        with pytest.raises(CorruptCheckpoint):
            read_offset_checkpoint(path, "t", 3)
    epochs = tmp_path / "leader-epoch-checkpoint"
    epochs.write_text("0\n2\n1 0\n4 17\n")
    assert read_leader_epochs(epochs) == [(1, 0), (4, 17)]
    epochs.write_text("")
    assert read_leader_epochs(epochs) == []


def test_partition_metadata_holds_the_topic_id_as_kafka_writes_it(tmp_path):
    path = tmp_path / "partition.metadata"
    topic_id = uuid.UUID("00000000-0000-0000-0000-000000000001")
    write_topic_id(path, topic_id)
    assert path.read_text() == "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"
    assert read_topic_id(path) == topic_id
    path.write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    with pytest.raises(CorruptCheckpoint):
        read_topic_id(path)  # the zero id is not a topic id
    path.write_text("version: 0\n")
    with pytest.raises(CorruptCheckpoint):
        read_topic_id(path)


def test_list_offsets_special_timestamps(open_log, make_batch, clock):
    log = open_log(LogConfig(segment_bytes=3 * len(make_batch(2))))
    for i, epoch in enumerate((1, 1, 2, 2, 3)):
        log.append(
            make_batch(timestamps=[clock.now_ms + 10 * i, clock.now_ms + 10 * i + 5]), leader_epoch=epoch
        )
    log.append(make_batch(timestamps=[clock.now_ms + 3, clock.now_ms + 1]), leader_epoch=3)
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP) == TimestampAndOffset(-1, 12, 3)
    earliest = log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP)
    assert (earliest.offset, earliest.leader_epoch) == (0, 1)
    newest = log.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert (newest.timestamp, newest.offset, newest.leader_epoch) == (clock.now_ms + 45, 9, 3)
    assert log.fetch_offset_by_timestamp(LATEST_TIERED_TIMESTAMP) == TimestampAndOffset(-1, -1, -1)
    found = log.fetch_offset_by_timestamp(clock.now_ms + 12)
    assert (found.timestamp, found.offset, found.leader_epoch) == (clock.now_ms + 15, 3, 1)
    assert log.fetch_offset_by_timestamp(clock.now_ms + 46) is None
    log.update_high_watermark(log.log_end_offset)
    log.delete_records_before(7)
    earliest = log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP)
    assert (earliest.offset, earliest.leader_epoch) == (7, 2)  # offset 7 was written in epoch 2
    assert log.fetch_offset_by_timestamp(clock.now_ms).offset == 7  # never below the log start offset
