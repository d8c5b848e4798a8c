"""Rules of how Kafka writes what a producer sends (the records family, continued from rules_records.py):
each compression codec accepted and read back, the topic's compression.type applied, and the fields a
broker assigns (offsets, leader epoch) or keeps (keys, values, headers, producer fields)."""

from __future__ import annotations

import crc32c

from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.records import Record, encode_batch

from .catalogue import Rule, add, rule
from .requests import batch, now_ms
from .rules_produce import fetch_batches, fetch_raw, init_producer_id, latest_offset, new_topic, produce_one
from .session import RuleSession, expect, expect_error

PRODUCE = 0


def _records(count: int = 4) -> list[Record]:
    now = now_ms()
    return [
        Record(i, now - count + i, b"key-%d" % i, b"value-%d " % i * 20, [("h", b"%d" % i), ("e", None)])
        for i in range(count)
    ]


def _same(read, sent: list[Record]) -> None:
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in read]
    want = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in sent]
    expect("records read back (offset, timestamp, key, value, headers)", got, want)


# ---- each codec from the producer, kept (compression.type=producer, the default) ------------------------


def _codec_check(codec: Compression):
    async def check(s: RuleSession, version: int) -> None:
        topic, topic_id = await new_topic(s)
        leader = await s.leader(topic)
        sent = _records()
        part = await produce_one(s, leader, version, topic, topic_id, encode_batch(sent, compression=codec))
        expect("(error_code, base_offset)", (part.error_code, part.base_offset), (Errors.NONE, 0))
        (read,) = await fetch_batches(s, leader, topic, topic_id)
        expect("batch compression", read.compression, codec)
        _same(read.records, sent)

    return check


for _codec in Compression:
    add(
        Rule(
            id=f"records.codec-{_codec.name.lower()}-read-back",
            api=PRODUCE,
            versions=(7, 13) if _codec == Compression.ZSTD else (3, 13),
            source="LogValidator.validateMessagesAndAssignOffsets sourceCompressionType",
            text=f"A {_codec.name.lower()} batch is accepted by a topic with the default compression.type "
            "(producer) and read back with that codec and the same records: offsets, timestamps, keys, "
            "values and headers.",
            check=_codec_check(_codec),
            family="records",
        )
    )


# ---- the topic's compression.type -----------------------------------------------------------------------

_TOPIC_CODECS = {
    "uncompressed": (Compression.NONE, Compression.GZIP),
    "gzip": (Compression.GZIP, Compression.NONE),
    "snappy": (Compression.SNAPPY, Compression.LZ4),
    "lz4": (Compression.LZ4, Compression.NONE),
    "zstd": (Compression.ZSTD, Compression.SNAPPY),
}


def _topic_codec_check(setting: str, target: Compression, source: Compression):
    async def check(s: RuleSession, version: int) -> None:
        topic, topic_id = await new_topic(s, **{"compression.type": setting})
        leader = await s.leader(topic)
        sent = _records()
        part = await produce_one(s, leader, version, topic, topic_id, encode_batch(sent, compression=source))
        expect_error("error_code", part.error_code, Errors.NONE)
        (read,) = await fetch_batches(s, leader, topic, topic_id)
        expect("batch compression", read.compression, target)
        _same(read.records, sent)

    return check


for _setting, (_target, _source) in _TOPIC_CODECS.items():
    add(
        Rule(
            id=f"records.topic-compression-{_setting}",
            api=PRODUCE,
            versions=(7, 13) if _target == Compression.ZSTD else (3, 13),
            source="LogValidator.validateMessagesAndAssignOffsetsCompressed targetCompression",
            text=f"A topic with compression.type={_setting} writes a {_source.name.lower()} batch "
            f"{'uncompressed' if _target == Compression.NONE else 'as ' + _target.name.lower()}, "
            "the records unchanged.",
            check=_topic_codec_check(_setting, _target, _source),
            family="records",
        )
    )


@rule(
    "records.same-codec-other-level-kept-in-place",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    since="3.8",
    source="LogValidator.validateMessagesAndAssignOffsets sourceCompressionType",
)
async def same_codec_kept(s: RuleSession, version: int) -> None:
    """A batch already in the topic's codec is not recompressed, whatever the topic's compression
    level (KIP-390): its compressed bytes are written as sent."""
    topic, topic_id = await new_topic(s, **{"compression.type": "gzip", "compression.gzip.level": "1"})
    leader = await s.leader(topic)
    sent = encode_batch(_records(), compression=Compression.GZIP, compression_level=9)
    expect_error("error_code", (await produce_one(s, leader, version, topic, topic_id, sent)).error_code, 0)
    raw = await fetch_raw(s, leader, topic, topic_id)
    expect("compressed bytes written as sent", raw[61 : len(sent)] == sent[61:], True)


@rule(
    "records.recompressed-batch-over-max-message-bytes",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="UnifiedLog.append validRecords maxMessageSize",
)
async def recompressed_too_large(s: RuleSession, version: int) -> None:
    """The batch as written must fit max.message.bytes too: a small gzip batch that an uncompressed
    topic writes out larger than the limit is refused with MESSAGE_TOO_LARGE."""
    topic, topic_id = await new_topic(s, **{"compression.type": "uncompressed", "max.message.bytes": "1000"})
    leader = await s.leader(topic)
    data = encode_batch([Record(0, now_ms(), b"k", b"x" * 5000)], compression=Compression.GZIP)
    part = await produce_one(s, leader, version, topic, topic_id, data)
    expect_error("error_code", part.error_code, Errors.MESSAGE_TOO_LARGE)
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 0)


# ---- what the broker assigns and keeps ------------------------------------------------------------------


@rule(
    "records.offsets-assigned-from-log-end",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.assignOffsetsNonCompressed",
)
async def offsets_assigned(s: RuleSession, version: int) -> None:
    """The broker gives a batch's records consecutive offsets from the log end offset, whatever base
    offset the producer wrote (0)."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    await produce_one(s, leader, version, topic, topic_id, batch(3))
    part = await produce_one(s, leader, version, topic, topic_id, batch(2))
    expect("second base_offset", part.base_offset, 3)
    batches = await fetch_batches(s, leader, topic, topic_id, 3)
    expect("offsets read back", [r.offset for b in batches for r in b.records if r.offset >= 3], [3, 4])


@rule(
    "records.compressed-offsets-assigned",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.validateMessagesAndAssignOffsetsCompressed",
)
async def compressed_offsets_assigned(s: RuleSession, version: int) -> None:
    """A compressed batch's records get consecutive offsets from the log end offset as well."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    await produce_one(s, leader, version, topic, topic_id, batch(2, compression=Compression.LZ4))
    part = await produce_one(s, leader, version, topic, topic_id, batch(3, compression=Compression.LZ4))
    expect("second base_offset", part.base_offset, 2)
    batches = await fetch_batches(s, leader, topic, topic_id, 2)
    expect("offsets read back", [r.offset for b in batches for r in b.records if r.offset >= 2], [2, 3, 4])


@rule(
    "records.partition-leader-epoch-stamped",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.assignOffsetsNonCompressed setPartitionLeaderEpoch",
)
async def leader_epoch_stamped(s: RuleSession, version: int) -> None:
    """The leader writes its leader epoch into each batch's partition leader epoch (the producer sends
    -1)."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    await produce_one(s, leader, version, topic, topic_id, batch())
    (read,) = await fetch_batches(s, leader, topic, topic_id)
    if read.partition_leader_epoch < 0:
        expect("batch partition_leader_epoch (the leader's epoch, >= 0)", read.partition_leader_epoch, 0)


@rule(
    "records.producer-fields-kept",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.assignOffsetsNonCompressed",
)
async def producer_fields_kept(s: RuleSession, version: int) -> None:
    """An idempotent batch is written with the producer id, epoch and base sequence it was sent with."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    pid, epoch = await init_producer_id(s)
    sent = batch(3, producer_id=pid, producer_epoch=epoch, base_sequence=0, compression=Compression.SNAPPY)
    expect_error("error_code", (await produce_one(s, leader, version, topic, topic_id, sent)).error_code, 0)
    (read,) = await fetch_batches(s, leader, topic, topic_id)
    got = (read.producer_id, read.producer_epoch, read.base_sequence, read.is_transactional)
    expect("(producer_id, producer_epoch, base_sequence, transactional)", got, (pid, epoch, 0, False))


@rule(
    "records.stale-max-timestamp-rewritten-compressed",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.validateMessagesAndAssignOffsetsCompressed setMaxTimestamp",
)
async def stale_max_timestamp_compressed(s: RuleSession, version: int) -> None:
    """A compressed batch kept in place whose header max timestamp is not its records' greatest is
    written with the records' greatest timestamp."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    now = now_ms()
    sent = bytearray(batch(timestamps=[now - 30, now - 10, now - 20], compression=Compression.GZIP))
    sent[35:43] = (now - 1000).to_bytes(8, "big", signed=True)  # max timestamp, then a CRC to match
    sent[17:21] = crc32c.crc32c(bytes(sent[21:])).to_bytes(4, "big")
    expect_error(
        "error_code", (await produce_one(s, leader, version, topic, topic_id, bytes(sent))).error_code, 0
    )
    (read,) = await fetch_batches(s, leader, topic, topic_id)  # the CRC is checked on reading
    expect("batch max_timestamp", read.max_timestamp, now - 10)


@rule(
    "records.batch-over-segment-bytes",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="UnifiedLog.append segmentSize RecordBatchTooLargeException",
)
async def over_segment_bytes(s: RuleSession, version: int) -> None:
    """A batch larger than the topic's segment.bytes (but within max.message.bytes) cannot fit any
    segment: it is refused with RECORD_LIST_TOO_LARGE."""
    size = 1 << 20  # segment.bytes' least value from Kafka 4.0
    topic, topic_id = await new_topic(s, **{"segment.bytes": str(size), "max.message.bytes": str(4 * size)})
    leader = await s.leader(topic)
    big = encode_batch([Record(0, now_ms(), b"k", bytes(range(256)) * (size // 256 + 512))])
    part = await produce_one(s, leader, version, topic, topic_id, big)
    expect_error("error_code", part.error_code, Errors.RECORD_LIST_TOO_LARGE)
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 0)
