"""Rules of the records a Produce carries, as Kafka's produce path checks and writes them: the framing
ProduceRequest checks from v3, the batch checks of UnifiedLog and LogValidator, timestamps against the
topic's message.timestamp.* configs, compacted topics' keys, and compression (each codec accepted and
read back, and the topic's compression.type applied)."""

from __future__ import annotations

import struct

import crc32c

from kconform.codecs.compression import Compression
from kconform.codecs.errors import Errors
from kconform.codecs.records import Record, encode_batch

from .catalogue import Rule, add, rule
from .requests import batch, now_ms
from .rules_produce import fetch_batches, latest_offset, new_topic, produce_one
from .session import RuleSession, expect, expect_error

PRODUCE = 0
_HOUR_MS = 3_600_000

# Offsets of the magic 2 batch header fields a rule forges (Kafka's DefaultRecordBatch layout).
_FIELDS = {
    "base_offset": (0, ">q"),
    "batch_length": (8, ">i"),
    "magic": (16, ">b"),
    "attributes": (21, ">h"),
    "last_offset_delta": (23, ">i"),
    "max_timestamp": (35, ">q"),
    "record_count": (57, ">i"),
}


def forge(data: bytes, *, fix_crc: bool = True, payload=None, **fields: int) -> bytes:
    """``data`` (one magic 2 batch) with header fields overwritten and/or its record bytes replaced by
    ``payload(old)``; the CRC is made valid again unless ``fix_crc`` is False."""
    buf = bytearray(data)
    if payload is not None:
        buf[61:] = payload(bytes(buf[61:]))
        struct.pack_into(">i", buf, 8, len(buf) - 12)
    for name, value in fields.items():
        where, fmt = _FIELDS[name]
        struct.pack_into(fmt, buf, where, value)
    if fix_crc:
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


async def _refused(s: RuleSession, version: int, records: bytes, code: int, **configs: str) -> None:
    """Produce ``records`` to a fresh topic: the partition is answered ``code`` and nothing is appended."""
    topic, topic_id = await new_topic(s, **configs)
    leader = await s.leader(topic)
    part = await produce_one(s, leader, version, topic, topic_id, records)
    expect_error("error_code", part.error_code, code)
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 0)


# ---- framing: ProduceRequest.validateRecords (v3+) and the request-wide read ----------------------------

_V3_FRAMING = [
    (
        "records.legacy-magic-0",
        lambda: encode_batch([Record(0, -1, b"k", b"v")], magic=0),
        "A Produce v3+ batch of magic 0 is refused with INVALID_RECORD: from v3 only magic 2 batches.",
    ),
    (
        "records.legacy-magic-1",
        lambda: encode_batch([Record(0, now_ms(), b"k", b"v")], magic=1),
        "A Produce v3+ batch of magic 1 is refused with INVALID_RECORD: from v3 only magic 2 batches.",
    ),
    (
        "records.two-batches",
        lambda: batch(2) + batch(2),
        "A Produce v3+ partition carrying two batches is refused with INVALID_RECORD: exactly one batch.",
    ),
    (
        "records.empty-records",
        lambda: b"",
        "A Produce v3+ partition with empty records is refused with INVALID_RECORD: it needs one batch.",
    ),
    (
        "records.truncated-batch",
        lambda: batch()[:40],
        "A Produce v3+ partition holding only part of a batch is refused with INVALID_RECORD.",
    ),
]


def _framing_check(make):
    async def check(s: RuleSession, version: int) -> None:
        await _refused(s, version, make(), Errors.INVALID_RECORD)

    return check


for _id, _make, _text in _V3_FRAMING:
    add(
        Rule(
            id=_id,
            api=PRODUCE,
            versions=(3, 13),
            source="ProduceRequest.validateRecords",
            text=_text,
            check=_framing_check(_make),
            family="records",
        )
    )


@rule(
    "records.trailing-partial-batch-ignored",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="UnifiedLog.trimInvalidBytes",
)
async def trailing_partial_batch(s: RuleSession, version: int) -> None:
    """Bytes after the one whole batch that do not make a whole batch are not a second batch: the
    batch is appended and the partial tail dropped."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    whole = batch()
    part = await produce_one(s, leader, version, topic, topic_id, whole + whole[:30])
    expect("(error_code, base_offset)", (part.error_code, part.base_offset), (Errors.NONE, 0))
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 3)


@rule(
    "records.invalid-magic-fails-request",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="ByteBufferLogInputStream.nextBatch via RequestUtils.hasTransactionalRecords",
)
async def invalid_magic(s: RuleSession, version: int) -> None:
    """A first batch with a magic byte Kafka does not know (3) is refused with CORRUPT_MESSAGE and
    nothing is appended."""
    await _refused(s, version, forge(batch(), magic=3, fix_crc=False), Errors.CORRUPT_MESSAGE)


@rule(
    "records.zstd-below-v7",
    api=PRODUCE,
    versions=(3, 6),
    family="records",
    source="ProduceRequest.validateRecords ZSTD",
)
async def zstd_below_v7(s: RuleSession, version: int) -> None:
    """A zstd batch in a Produce below v7 is refused with UNSUPPORTED_COMPRESSION_TYPE (KIP-110)."""
    await _refused(s, version, batch(compression=Compression.ZSTD), Errors.UNSUPPORTED_COMPRESSION_TYPE)


# ---- UnifiedLog.analyzeAndValidateRecords ------------------------------------------------------------------


@rule(
    "records.corrupt-crc",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="UnifiedLog.analyzeAndValidateRecords ensureValid",
)
async def corrupt_crc(s: RuleSession, version: int) -> None:
    """A batch whose CRC-32C does not match its bytes is refused with CORRUPT_MESSAGE, whatever its
    codec, and nothing is appended."""
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    codecs = [c for c in Compression if c != Compression.ZSTD or version >= 7]
    for codec in codecs:
        data = bytearray(batch(compression=codec))
        data[-1] ^= 0x01  # the last payload byte, covered by the CRC
        part = await produce_one(s, leader, version, topic, topic_id, bytes(data))
        expect_error(f"error_code ({codec.name})", part.error_code, Errors.CORRUPT_MESSAGE)
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 0)


@rule(
    "records.batch-over-max-message-bytes",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="UnifiedLog.analyzeAndValidateRecords maxMessageSize",
)
async def over_max_message_bytes(s: RuleSession, version: int) -> None:
    """A batch larger than the topic's max.message.bytes is refused with MESSAGE_TOO_LARGE; one within
    it is appended."""
    topic, topic_id = await new_topic(s, **{"max.message.bytes": "1000"})
    leader = await s.leader(topic)
    small = await produce_one(s, leader, version, topic, topic_id, batch(1, size=100))
    large = await produce_one(s, leader, version, topic, topic_id, batch(4, size=400))
    expect_error("small batch error_code", small.error_code, Errors.NONE)
    expect_error("large batch error_code", large.error_code, Errors.MESSAGE_TOO_LARGE)
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 1)


@rule(
    "records.base-offset-not-zero",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="UnifiedLog.analyzeAndValidateRecords baseOffset",
)
async def base_offset_not_zero(s: RuleSession, version: int) -> None:
    """A client's magic 2 batch must have base offset 0; any other is refused with INVALID_RECORD."""
    await _refused(s, version, forge(batch(), base_offset=5, fix_crc=False), Errors.INVALID_RECORD)


@rule(
    "records.unknown-compression-codec",
    api=PRODUCE,
    versions=(7, 13),
    family="records",
    source="UnifiedLog.analyzeAndValidateRecords CompressionType.forId",
)
async def unknown_codec(s: RuleSession, version: int) -> None:
    """A batch whose attributes name compression codec 5, which Kafka does not define, is refused with
    UNKNOWN_SERVER_ERROR (the lookup's IllegalArgumentException is no API error)."""
    await _refused(s, version, forge(batch(), attributes=5), Errors.UNKNOWN_SERVER_ERROR)


# ---- LogValidator.validateBatch and the record iterator: INVALID_RECORD ---------------------------------

_BATCH_CHECKS = [
    (
        "records.last-offset-delta-mismatch",
        lambda: forge(batch(3), last_offset_delta=5),
        "LogValidator.validateBatch countFromOffsets",
        "A batch whose last offset delta does not match its record count is refused with INVALID_RECORD.",
    ),
    (
        "records.record-count-not-positive",
        lambda: forge(batch(3), record_count=0, last_offset_delta=-1),
        "LogValidator.validateBatch countFromOffsets",
        "A batch declaring zero records (and a last offset delta of -1) is refused with INVALID_RECORD.",
    ),
    (
        "records.batch-without-records",
        lambda: encode_batch([], producer_id=1, producer_epoch=0, base_sequence=0),
        "LogValidator.validateBatch",
        "A batch with no records at all, as compaction writes but a producer may not, is refused with "
        "INVALID_RECORD.",
    ),
    (
        "records.declared-count-above-records",
        lambda: forge(batch(3), last_offset_delta=5, record_count=6),
        "DefaultRecordBatch.RecordIterator",
        "A batch declaring more records than its bytes hold is refused with INVALID_RECORD.",
    ),
    (
        "records.control-batch-from-client",
        # not transactional: a transactional batch without a transactional id is refused before any
        # validation (records.transactional-batch-without-transactional-id)
        lambda: encode_batch([Record(0, now_ms(), b"k", b"v")], is_control=True),
        "LogValidator.validateBatch isControlBatch",
        "A control batch sent by a client (only the broker writes them) is refused with INVALID_RECORD.",
    ),
    (
        "records.producer-id-without-sequence",
        lambda: batch(producer_id=7, producer_epoch=0, base_sequence=-1),
        "LogValidator.validateBatch hasProducerId baseSequence",
        "A batch with a producer id but no base sequence (-1) is refused with INVALID_RECORD.",
    ),
    (
        "records.malformed-record",
        lambda: forge(batch(), payload=lambda old: old[:-3]),
        "DefaultRecord.readFrom",
        "A batch whose CRC is right but whose last record is cut short is refused with INVALID_RECORD.",
    ),
]


def _batch_check(make):
    async def check(s: RuleSession, version: int) -> None:
        await _refused(s, version, make(), Errors.INVALID_RECORD)

    return check


for _id, _make, _source, _text in _BATCH_CHECKS:
    add(
        Rule(
            id=_id,
            api=PRODUCE,
            versions=(3, 13),
            source=_source,
            text=_text,
            check=_batch_check(_make),
            family="records",
        )
    )


@rule(
    "records.transactional-batch-without-transactional-id",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="KafkaApis.handleProduceRequest hasTransactionalRecords",
)
async def transactional_without_id(s: RuleSession, version: int) -> None:
    """A transactional batch in a Produce request without a transactional id is refused, whole, with
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED, before any topic or batch is looked at (with or without an
    authorizer: the id must be there and writable)."""
    records = [Record(0, now_ms(), b"k", b"v")]
    data = encode_batch(records, is_transactional=True, producer_id=7, producer_epoch=0, base_sequence=0)
    await _refused(s, version, data, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)


@rule(
    "records.undecompressable-payload",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.validateMessagesAndAssignOffsetsCompressed KafkaException",
)
async def undecompressable(s: RuleSession, version: int) -> None:
    """A gzip batch with a valid CRC whose payload does not decompress is refused with
    UNKNOWN_SERVER_ERROR (the codec's failure is no API error)."""
    data = forge(batch(compression=Compression.GZIP), payload=lambda old: b"\x1f\x8b" + bytes(len(old)))
    await _refused(s, version, data, Errors.UNKNOWN_SERVER_ERROR)


# ---- compacted topics (LogValidator.validateKey) ----------------------------------------------------------


def _keyless(count: int, missing: set[int], codec: Compression = Compression.NONE) -> bytes:
    now = now_ms()
    return encode_batch(
        [Record(i, now, None if i in missing else b"k%d" % i, b"v") for i in range(count)], compression=codec
    )


@rule(
    "records.compacted-topic-needs-keys",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.validateKey",
)
async def compacted_needs_keys(s: RuleSession, version: int) -> None:
    """A compacted topic refuses a batch with a keyless record with INVALID_RECORD and appends none of
    it."""
    await _refused(s, version, _keyless(3, {1}), Errors.INVALID_RECORD, **{"cleanup.policy": "compact"})


@rule(
    "records.compacted-topic-needs-keys-compressed",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.validateMessagesAndAssignOffsetsCompressed validateKey",
)
async def compacted_needs_keys_compressed(s: RuleSession, version: int) -> None:
    """A compacted topic refuses a compressed batch with a keyless record with INVALID_RECORD too."""
    data = _keyless(3, {2}, Compression.GZIP)
    await _refused(s, version, data, Errors.INVALID_RECORD, **{"cleanup.policy": "compact"})


@rule(
    "records.compacted-topic-record-errors",
    api=PRODUCE,
    versions=(8, 13),
    family="records",
    source="LogValidator.processRecordErrors",
)
async def compacted_record_errors(s: RuleSession, version: int) -> None:
    """A compacted topic's refusal (v8+) lists every keyless record's index with a message saying a
    compacted topic cannot accept a message without a key, and an error message showing at most the
    first three."""
    topic, topic_id = await new_topic(s, **{"cleanup.policy": "compact"})
    leader = await s.leader(topic)
    part = await produce_one(s, leader, version, topic, topic_id, _keyless(6, {0, 1, 3, 4, 5}))
    expect_error("error_code", part.error_code, Errors.INVALID_RECORD)
    expect("record_errors[].batch_index", [e.batch_index for e in part.record_errors], [0, 1, 3, 4, 5])
    text = part.record_errors[0].batch_index_error_message or ""
    expect(
        "record_errors[0] names the rule", "Compacted topic cannot accept message without key" in text, True
    )
    message = part.error_message or ""
    expect("error_message counts the errors", "due to 5 record errors in total" in message, True, message)
    expect("error_message shows three", message.count("RecordError("), 3, message)


@rule(
    "records.compacted-topic-takes-tombstones",
    api=PRODUCE,
    versions=(3, 13),
    family="records",
    source="LogValidator.validateKey",
)
async def compacted_tombstones(s: RuleSession, version: int) -> None:
    """A compacted topic takes keyed records, tombstones (a key and a null value) included."""
    topic, topic_id = await new_topic(s, **{"cleanup.policy": "compact"})
    leader = await s.leader(topic)
    now = now_ms()
    data = encode_batch([Record(0, now, b"a", b"1"), Record(1, now, b"a", None)])
    part = await produce_one(s, leader, version, topic, topic_id, data)
    expect("(error_code, base_offset)", (part.error_code, part.base_offset), (Errors.NONE, 0))
    (read,) = await fetch_batches(s, leader, topic, topic_id)
    expect("values read back", [r.value for r in read.records], [b"1", None])
