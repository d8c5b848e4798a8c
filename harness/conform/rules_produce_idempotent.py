"""Rules of idempotent producers at the partition leader (the produce family, continued from
rules_produce.py): duplicates answered with their original offsets, sequence gaps, overlaps and wraps,
and producer epochs, each with a producer id from InitProducerId."""

from __future__ import annotations

from kconform.codecs.errors import Errors

from .catalogue import rule
from .requests import batch, now_ms
from .rules_produce import PRODUCE, init_producer_id, latest_offset, new_topic, produce_one
from .session import RuleSession, expect, expect_error

# ---- idempotent producers --------------------------------------------------------------------------------


async def _idempotent(s: RuleSession):
    topic, topic_id = await new_topic(s)
    leader = await s.leader(topic)
    pid, epoch = await init_producer_id(s)
    return topic, topic_id, leader, pid, epoch


@rule(
    "produce.idempotent-duplicate-gets-original-offset",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="UnifiedLog.analyzeAndValidateProducerState findDuplicateBatch",
)
async def idempotent_duplicate(s: RuleSession, version: int) -> None:
    """A batch resent with the same producer id, epoch and sequences as one of the producer's last
    batches is answered NONE with the original base offset, and nothing new is appended."""
    topic, topic_id, leader, pid, epoch = await _idempotent(s)
    first = batch(3, producer_id=pid, producer_epoch=epoch, base_sequence=0)
    second = batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=3)
    got = []
    for records in (first, second, first):
        part = await produce_one(s, leader, version, topic, topic_id, records)
        got.append((part.error_code, part.base_offset))
    expect("(error_code, base_offset) of first, second, first again", got, [(0, 0), (0, 3), (0, 0)])
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 5)


@rule(
    "produce.idempotent-duplicate-among-last-five",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="ProducerStateEntry.findDuplicateBatch NUM_BATCHES_TO_RETAIN",
)
async def idempotent_duplicate_last_five(s: RuleSession, version: int) -> None:
    """The broker remembers a producer's last five batches per partition: resending the second of five
    is a duplicate answered with its original offset."""
    topic, topic_id, leader, pid, epoch = await _idempotent(s)
    sent = [batch(1, producer_id=pid, producer_epoch=epoch, base_sequence=i) for i in range(5)]
    for records in sent:
        await produce_one(s, leader, version, topic, topic_id, records)
    part = await produce_one(s, leader, version, topic, topic_id, sent[1])
    expect("(error_code, base_offset)", (part.error_code, part.base_offset), (Errors.NONE, 1))
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 5)


@rule(
    "produce.idempotent-resend-older-than-five-is-out-of-order",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="ProducerAppendInfo.checkSequence inSequence",
)
async def idempotent_older_than_five(s: RuleSession, version: int) -> None:
    """A batch resent after five newer ones is no longer found as a duplicate; its sequence is behind,
    so it is refused with OUT_OF_ORDER_SEQUENCE_NUMBER."""
    topic, topic_id, leader, pid, epoch = await _idempotent(s)
    sent = [batch(1, producer_id=pid, producer_epoch=epoch, base_sequence=i) for i in range(6)]
    for records in sent:
        await produce_one(s, leader, version, topic, topic_id, records)
    part = await produce_one(s, leader, version, topic, topic_id, sent[0])
    expect_error("error_code", part.error_code, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 6)


@rule(
    "produce.idempotent-sequence-gap",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="ProducerAppendInfo.checkSequence inSequence",
)
async def idempotent_gap(s: RuleSession, version: int) -> None:
    """A batch whose first sequence is not the producer's last sequence plus one (a gap) is refused
    with OUT_OF_ORDER_SEQUENCE_NUMBER and not appended."""
    topic, topic_id, leader, pid, epoch = await _idempotent(s)
    ok = await produce_one(
        s, leader, version, topic, topic_id, batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=0)
    )
    gap = await produce_one(
        s, leader, version, topic, topic_id, batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=5)
    )
    expect_error("first error_code", ok.error_code, Errors.NONE)
    expect_error("error_code", gap.error_code, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 2)


@rule(
    "produce.idempotent-overlapping-sequence-is-out-of-order",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="ProducerAppendInfo.checkSequence inSequence",
)
async def idempotent_overlap(s: RuleSession, version: int) -> None:
    """A batch whose sequences overlap earlier ones without matching any remembered batch exactly is
    no duplicate: it is refused with OUT_OF_ORDER_SEQUENCE_NUMBER."""
    topic, topic_id, leader, pid, epoch = await _idempotent(s)
    await produce_one(
        s, leader, version, topic, topic_id, batch(3, producer_id=pid, producer_epoch=epoch, base_sequence=0)
    )
    part = await produce_one(
        s, leader, version, topic, topic_id, batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=1)
    )
    expect_error("error_code", part.error_code, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 3)


@rule(
    "produce.idempotent-stale-epoch",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="ProducerAppendInfo.checkProducerEpoch",
)
async def idempotent_stale_epoch(s: RuleSession, version: int) -> None:
    """A batch with an epoch below the last one the partition saw for its producer id is refused with
    INVALID_PRODUCER_EPOCH."""
    topic, topic_id, leader, pid, epoch = await _idempotent(s)
    newer = await produce_one(
        s,
        leader,
        version,
        topic,
        topic_id,
        batch(2, producer_id=pid, producer_epoch=epoch + 3, base_sequence=0),
    )
    stale = await produce_one(
        s,
        leader,
        version,
        topic,
        topic_id,
        batch(2, producer_id=pid, producer_epoch=epoch + 2, base_sequence=2),
    )
    expect_error("newer epoch error_code", newer.error_code, Errors.NONE)
    expect_error("error_code", stale.error_code, Errors.INVALID_PRODUCER_EPOCH)
    expect("log end offset", await latest_offset(s, leader, topic, topic_id), 2)


@rule(
    "produce.idempotent-new-epoch-must-start-at-zero",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="ProducerAppendInfo.checkSequence new epoch",
)
async def idempotent_new_epoch_nonzero(s: RuleSession, version: int) -> None:
    """A batch opening a new, higher epoch for a known producer must start at sequence 0; any other
    first sequence is refused with OUT_OF_ORDER_SEQUENCE_NUMBER."""
    topic, topic_id, leader, pid, epoch = await _idempotent(s)
    await produce_one(
        s, leader, version, topic, topic_id, batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=0)
    )
    part = await produce_one(
        s,
        leader,
        version,
        topic,
        topic_id,
        batch(2, producer_id=pid, producer_epoch=epoch + 1, base_sequence=2),
    )
    expect_error("error_code", part.error_code, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)


@rule(
    "produce.idempotent-new-epoch-restarts-sequence",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="ProducerAppendInfo.checkSequence new epoch",
)
async def idempotent_new_epoch_zero(s: RuleSession, version: int) -> None:
    """A batch opening a new, higher epoch at sequence 0 is appended whatever sequence the old epoch
    had reached."""
    topic, topic_id, leader, pid, epoch = await _idempotent(s)
    await produce_one(
        s, leader, version, topic, topic_id, batch(4, producer_id=pid, producer_epoch=epoch, base_sequence=0)
    )
    part = await produce_one(
        s,
        leader,
        version,
        topic,
        topic_id,
        batch(2, producer_id=pid, producer_epoch=epoch + 1, base_sequence=0),
    )
    expect("(error_code, base_offset)", (part.error_code, part.base_offset), (Errors.NONE, 4))


@rule(
    "produce.idempotent-first-batch-any-sequence",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="ProducerAppendInfo.checkSequence NO_PRODUCER_EPOCH",
)
async def idempotent_first_batch_any_sequence(s: RuleSession, version: int) -> None:
    """A partition that has no state for a producer id takes its first batch at any sequence (the
    state may have been removed by retention), and the next batch must follow on from it."""
    topic, topic_id, leader, pid, epoch = await _idempotent(s)
    first = await produce_one(
        s, leader, version, topic, topic_id, batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=7)
    )
    expect("(error_code, base_offset)", (first.error_code, first.base_offset), (Errors.NONE, 0))
    after = await produce_one(
        s, leader, version, topic, topic_id, batch(1, producer_id=pid, producer_epoch=epoch, base_sequence=9)
    )
    expect("next (error_code, base_offset)", (after.error_code, after.base_offset), (Errors.NONE, 2))


@rule(
    "produce.idempotent-sequences-are-per-partition",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="ProducerStateManager.prepareUpdate",
)
async def idempotent_per_partition(s: RuleSession, version: int) -> None:
    """A producer's sequences are kept per partition: after sequences 0-2 on partition 0, partition 1
    takes the same producer's batch at sequence 0."""
    topic, topic_id = await new_topic(s, partitions=2)
    pid, epoch = await init_producer_id(s)
    one = await s.leader(topic, 0)
    await produce_one(
        s, one, version, topic, topic_id, batch(3, producer_id=pid, producer_epoch=epoch, base_sequence=0)
    )
    two = await s.leader(topic, 1)
    part = await produce_one(
        s,
        two,
        version,
        topic,
        topic_id,
        batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=0),
        partition=1,
    )
    expect("(error_code, base_offset)", (part.error_code, part.base_offset), (Errors.NONE, 0))


@rule(
    "produce.idempotent-sequence-wraps-at-int-max",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="ProducerAppendInfo.inSequence",
)
async def idempotent_sequence_wraps(s: RuleSession, version: int) -> None:
    """Sequence numbers wrap: after a batch ending at sequence 2147483647 the next batch starts at 0."""
    topic, topic_id, leader, pid, epoch = await _idempotent(s)
    top = 2**31 - 1
    ids = {"producer_id": pid, "producer_epoch": epoch}
    first = await produce_one(s, leader, version, topic, topic_id, batch(2, base_sequence=top - 1, **ids))
    expect_error("batch ending at the top: error_code", first.error_code, Errors.NONE)
    after = await produce_one(s, leader, version, topic, topic_id, batch(1, base_sequence=0, **ids))
    expect("(error_code, base_offset)", (after.error_code, after.base_offset), (Errors.NONE, 2))


@rule(
    "produce.idempotent-duplicate-answers-batch-timestamp",
    api=PRODUCE,
    versions=(3, 13),
    family="produce",
    source="UnifiedLog.append duplicate BatchMetadata.timestamp",
)
async def duplicate_answers_batch_timestamp(s: RuleSession, version: int) -> None:
    """A duplicate batch is answered with the original batch's max timestamp as log_append_time_ms,
    from the producer state, even on a CreateTime topic."""
    topic, topic_id, leader, pid, epoch = await _idempotent(s)
    stamp = now_ms() - 1000
    records = batch(2, timestamps=[stamp - 1, stamp], producer_id=pid, producer_epoch=epoch, base_sequence=0)
    first = await produce_one(s, leader, version, topic, topic_id, records)
    expect("first log_append_time_ms", first.log_append_time_ms, -1)
    again = await produce_one(s, leader, version, topic, topic_id, records)
    expect(
        "duplicate (error_code, log_append_time_ms)", (again.error_code, again.log_append_time_ms), (0, stamp)
    )
