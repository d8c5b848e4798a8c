"""Producer-state and transaction operations for the differential engine: producer ids, idempotent and
transactional produce with real sequence numbers, and the transaction requests around them.

Producers are indexes; each side's producer id, epoch and next sequence per partition live in
``Context.state``, learnt from that side's answers, so a case follows a producer through
init -> add partitions -> produce -> add offsets -> commit offsets -> end, on both targets at once."""

from __future__ import annotations

from dataclasses import dataclass

from kconform.codecs.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    ListTransactionsRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)
from kconform.codecs.records import Record, encode_batch

from .context import Context, log_end_appended, topic_shape
from .operations import BASE_TIMESTAMP, Operation, PerSide

__all__ = [
    "AddOffsetsToTxn",
    "AddPartitionsToTxn",
    "DescribeProducers",
    "DescribeTransactions",
    "EndTxn",
    "InitProducerId",
    "ListTransactions",
    "ProducerProduce",
    "TxnOffsetCommit",
]


def _producer(ctx: Context, side: str, producer: int) -> tuple[int, int]:
    return ctx.state.get((side, "producer", producer), (-1, -1))


def _known(ctx: Context, producer: int) -> list[str]:
    return [] if ("a", "producer", producer) in ctx.state else ["no producer id"]


@dataclass(frozen=True)
class InitProducerId(Operation):
    producer: int = 0
    transactional: bool = True
    api_key = 22

    def body(self, ctx, version):
        return InitProducerIdRequest(
            transactional_id=ctx.transactional_id(self.producer) if self.transactional else None,
            transaction_timeout_ms=10_000,
            producer_id=-1,
            producer_epoch=-1,
        )

    def learn(self, side, ctx, answer):
        if answer.error_code == 0:
            ctx.state[(side, "producer", self.producer)] = (answer.producer_id, answer.producer_epoch)
            for key in [k for k in ctx.state if k[:3] == (side, "sequence", self.producer)]:
                del ctx.state[key]  # a new epoch starts its sequences again

    def _shape_parts(self, ctx):
        return ["transactional"] if self.transactional else ["idempotent"]


@dataclass(frozen=True)
class ProducerProduce(PerSide, Operation):
    """A produce with the producer's id, epoch and next sequence (``sequence_gap`` skips one ahead, the
    out-of-order case), inside its transaction when ``transactional``."""

    producer: int = 0
    topic: int = 0
    partition: int = 0
    values: tuple[bytes | None, ...] = (b"v",)
    transactional: bool = True
    sequence_gap: bool = False
    api_key = 0
    min_version = 3  # producer ids travel in v2 batches, which Produce carries from v3

    def writes(self, ctx):
        return (self.topic,)

    def body_for(self, side, ctx, version):
        producer_id, epoch = _producer(ctx, side, self.producer)
        sequence = ctx.state.get((side, "sequence", self.producer, self.topic, self.partition), 0)
        records = [Record(i, BASE_TIMESTAMP + i, None, v) for i, v in enumerate(self.values)]
        batch = encode_batch(
            records,
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=sequence + (1 if self.sequence_gap else 0),
            is_transactional=self.transactional,
        )
        data = ProduceRequest.PartitionProduceData(index=self.partition, records=batch)
        topic = ProduceRequest.TopicProduceData(name=ctx.topic(self.topic), partition_data=[data])
        transactional_id = ctx.transactional_id(self.producer) if self.transactional else None
        return ProduceRequest(
            transactional_id=transactional_id, acks=-1, timeout_ms=5_000, topic_data=[topic]
        )

    def names_topics_by_id(self, version):
        return False  # the producer steps stay at versions that name topics (v3-12)

    def learn(self, side, ctx, answer):
        errors = [p.error_code for t in answer.responses for p in t.partition_responses]
        if errors and errors[0] == 0 and not self.sequence_gap:
            key = (side, "sequence", self.producer, self.topic, self.partition)
            ctx.state[key] = ctx.state.get(key, 0) + len(self.values)
        log_end_appended(side, ctx, self.topic, self.partition, answer, len(self.values))

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        parts = ["transactional" if self.transactional else "idempotent"]
        parts += ["sequence gap"] if self.sequence_gap else []
        return parts + _known(ctx, self.producer) + topic_shape(ctx, self.topic, self.partition)


@dataclass(frozen=True)
class AddPartitionsToTxn(PerSide, Operation):
    producer: int = 0
    topic: int = 0
    partition: int = 0
    api_key = 24
    max_version = 3  # v4+ is the brokers' own batched form (KIP-890), not sent by clients

    def body_for(self, side, ctx, version):
        producer_id, epoch = _producer(ctx, side, self.producer)
        topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(
            name=ctx.topic(self.topic), partitions=[self.partition]
        )
        return AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=ctx.transactional_id(self.producer),
            v3_and_below_producer_id=producer_id,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[topic],
        )

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        return _known(ctx, self.producer) + topic_shape(ctx, self.topic, self.partition)


@dataclass(frozen=True)
class AddOffsetsToTxn(PerSide, Operation):
    producer: int = 0
    group: int = 0
    api_key = 25

    def body_for(self, side, ctx, version):
        producer_id, epoch = _producer(ctx, side, self.producer)
        return AddOffsetsToTxnRequest(
            transactional_id=ctx.transactional_id(self.producer),
            producer_id=producer_id,
            producer_epoch=epoch,
            group_id=ctx.group(self.group),
        )

    def _shape_parts(self, ctx):
        return _known(ctx, self.producer)


@dataclass(frozen=True)
class TxnOffsetCommit(PerSide, Operation):
    producer: int = 0
    group: int = 0
    topic: int = 0
    partition: int = 0
    offset: int = 1
    api_key = 28

    def body_for(self, side, ctx, version):
        producer_id, epoch = _producer(ctx, side, self.producer)
        partition = TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
            partition_index=self.partition,
            committed_offset=self.offset,
            committed_leader_epoch=-1,
            committed_metadata="",
        )
        topic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(
            name=ctx.topic(self.topic), partitions=[partition]
        )
        return TxnOffsetCommitRequest(
            transactional_id=ctx.transactional_id(self.producer),
            group_id=ctx.group(self.group),
            producer_id=producer_id,
            producer_epoch=epoch,
            generation_id=-1,
            member_id="",
            topics=[topic],
        )

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        return _known(ctx, self.producer) + topic_shape(ctx, self.topic, self.partition)


@dataclass(frozen=True)
class EndTxn(PerSide, Operation):
    producer: int = 0
    commit: bool = True
    api_key = 26

    def ran(self, ctx):
        ctx.state[("a", "log ends unknown")] = True  # markers, in partitions the case may not know of

    def writes(self, ctx):
        return (0, 1, 2)  # a marker in every partition of the transaction: any of the case's topics

    def body_for(self, side, ctx, version):
        producer_id, epoch = _producer(ctx, side, self.producer)
        return EndTxnRequest(
            transactional_id=ctx.transactional_id(self.producer),
            producer_id=producer_id,
            producer_epoch=epoch,
            committed=self.commit,
        )

    def learn(self, side, ctx, answer):
        # From EndTxn v5 (KIP-890) every transaction ends with a bumped epoch, given in the answer.
        if answer.error_code == 0 and answer.producer_id >= 0 and answer.producer_epoch >= 0:
            ctx.state[(side, "producer", self.producer)] = (answer.producer_id, answer.producer_epoch)

    def _shape_parts(self, ctx):
        return ["commit" if self.commit else "abort"] + _known(ctx, self.producer)


@dataclass(frozen=True)
class DescribeTransactions(Operation):
    producers: tuple[int, ...] = (0,)
    api_key = 65

    def body(self, ctx, version):
        return DescribeTransactionsRequest(
            transactional_ids=[ctx.transactional_id(p) for p in self.producers]
        )


@dataclass(frozen=True)
class ListTransactions(Operation):
    """Every transaction the broker has; only this case's own are compared."""

    api_key = 66

    def own_entries(self, version):
        return ("transaction_states", "transactional_id")

    def body(self, ctx, version):
        return ListTransactionsRequest(state_filters=[], producer_id_filters=[], duration_filter=-1)


@dataclass(frozen=True)
class DescribeProducers(Operation):
    topic: int = 0
    partition: int = 0
    api_key = 61

    def body(self, ctx, version):
        topic = DescribeProducersRequest.TopicRequest(
            name=ctx.topic(self.topic), partition_indexes=[self.partition]
        )
        return DescribeProducersRequest(topics=[topic])

    def topics(self, ctx):
        return [ctx.topic(self.topic)]

    def _shape_parts(self, ctx):
        return topic_shape(ctx, self.topic, self.partition)
