"""Rules of adding to a transaction: AddPartitionsToTxn (the clients' form and the brokers' batched form)
and AddOffsetsToTxn."""

from __future__ import annotations

from kconform.codecs.errors import Errors

from .catalogue import rule
from .rules_transactions import (
    ADD_OFFSETS,
    ADD_PARTITIONS,
    FAMILY,
    Txn,
    _retry,
)
from .session import RuleSession, expect_error

# ---- AddPartitionsToTxn ------------------------------------------------------------------------------


async def _add_partitions_case(s: RuleSession, version: int, case: str) -> None:
    topic, _ = await s.create_topic()
    txn = await Txn.start(s)
    await txn.knows(topic)
    key = (topic, 0)
    if case == "unknown-id":
        codes = await (await txn.stranger()).add([key], version)
        expect_error(
            f"partition_error_code[{topic}-0]", codes.get(key, -1), Errors.INVALID_PRODUCER_ID_MAPPING
        )
    elif case == "wrong-pid":
        codes = await txn.add([key], version, pid=txn.pid + 1)
        expect_error(
            f"partition_error_code[{topic}-0]", codes.get(key, -1), Errors.INVALID_PRODUCER_ID_MAPPING
        )
    elif case == "fenced":
        codes = await txn.add([key], version, epoch=txn.epoch + 1)
        fenced = Errors.PRODUCER_FENCED if version >= 2 else Errors.INVALID_PRODUCER_EPOCH
        expect_error(f"partition_error_code[{topic}-0]", codes.get(key, -1), fenced)
    elif case == "unknown-topic":
        gone = (s.name("gone"), 0)
        codes = await txn.add([key, gone], version)
        expect_error(
            f"partition_error_code[{gone[0]}-0]", codes.get(gone, -1), Errors.UNKNOWN_TOPIC_OR_PARTITION
        )
        expect_error(f"partition_error_code[{topic}-0]", codes.get(key, -1), Errors.OPERATION_NOT_ATTEMPTED)
    else:  # added
        codes = await txn.add([key], version)
        expect_error(f"partition_error_code[{topic}-0]", codes.get(key, -1), Errors.NONE)


_ADD_CASES = {
    "unknown-transactional-id": (
        "unknown-id",
        (0, 3),
        "TransactionCoordinator.handleAddPartitionsToTransaction getTransactionState None",
        "AddPartitionsToTxn for a transactional id the coordinator does not know is refused per "
        "partition with INVALID_PRODUCER_ID_MAPPING.",
    ),
    "wrong-producer-id": (
        "wrong-pid",
        (0, 3),
        "TransactionCoordinator.handleAddPartitionsToTransaction producerId mismatch",
        "AddPartitionsToTxn with a producer id other than the transactional id's is refused per "
        "partition with INVALID_PRODUCER_ID_MAPPING.",
    ),
    "wrong-epoch": (
        "fenced",
        (0, 3),
        "TransactionCoordinator.handleAddPartitionsToTransaction producerEpoch mismatch",
        "AddPartitionsToTxn with an epoch other than the current one is refused per partition with "
        "PRODUCER_FENCED (INVALID_PRODUCER_EPOCH below v2, whose clients do not know PRODUCER_FENCED).",
    ),
    "unknown-topic": (
        "unknown-topic",
        (0, 3),
        "KafkaApis.handleAddPartitionsToTxnRequest nonExistingTopicErrors",
        "AddPartitionsToTxn naming a partition that does not exist fails it with "
        "UNKNOWN_TOPIC_OR_PARTITION and the others with OPERATION_NOT_ATTEMPTED, adding none.",
    ),
    "adds": (
        "added",
        (0, 3),
        "TransactionCoordinator.handleAddPartitionsToTransaction prepareAddPartitions",
        "AddPartitionsToTxn at the current producer id and epoch adds the partition: NONE for it.",
    ),
}


def _add_check(case: str):
    async def check(s: RuleSession, version: int) -> None:
        await _add_partitions_case(s, version, case)

    return check


def _register_add_cases() -> None:
    from .catalogue import Rule, add

    for name, (case, versions, source, text) in _ADD_CASES.items():
        add(
            Rule(
                f"txn.add-partitions.{name}", ADD_PARTITIONS, versions, source, text, _add_check(case), FAMILY
            )
        )


_register_add_cases()


async def _batched(s: RuleSession, version: int, case: str) -> None:
    topic, _ = await s.create_topic()
    txn = await Txn.start(s)
    await txn.knows(topic)
    key = (topic, 0)
    where = f"partition_error_code[{topic}-0]"
    if case == "verify-outside":
        codes = await txn.add_batched([key], version, verify_only=True)
        expect_error(where, codes.get(key, -1), Errors.TRANSACTION_ABORTABLE)
    elif case == "verify-inside":
        await txn.add_ok(topic)
        codes = await txn.add_batched([key], version, verify_only=True)
        expect_error(where, codes.get(key, -1), Errors.NONE)
    elif case == "fenced":
        codes = await txn.add_batched([key], version, verify_only=True, epoch=txn.epoch + 1)
        expect_error(where, codes.get(key, -1), Errors.PRODUCER_FENCED)
    else:  # adds
        codes = await txn.add_batched([key], version, verify_only=False)
        expect_error(where, codes.get(key, -1), Errors.NONE)
        again = await txn.add_batched([key], version, verify_only=True)
        expect_error(f"{where} verified after adding", again.get(key, -1), Errors.NONE)


_BATCHED_CASES = {
    "verify-only-outside": (
        "verify-outside",
        "TransactionCoordinator.handleVerifyPartitionsInTransaction TRANSACTION_ABORTABLE",
        "A verify-only AddPartitionsToTxn (v4+, brokers' batched form) for a partition outside the "
        "ongoing transaction answers TRANSACTION_ABORTABLE for it.",
    ),
    "verify-only-inside": (
        "verify-inside",
        "TransactionCoordinator.handleVerifyPartitionsInTransaction",
        "A verify-only AddPartitionsToTxn (v4+) for a partition already in the transaction answers NONE.",
    ),
    "batched-wrong-epoch": (
        "fenced",
        "TransactionCoordinator.handleVerifyPartitionsInTransaction producerEpoch mismatch",
        "A batched AddPartitionsToTxn (v4+) at an epoch other than the current one answers PRODUCER_FENCED.",
    ),
    "batched-adds": (
        "adds",
        "KafkaApis.handleAddPartitionsToTxnRequest TransactionCoordinator.handleAddPartitionsToTransaction",
        "A batched AddPartitionsToTxn (v4+) that is not verify-only adds the partitions to the transaction.",
    ),
}


def _batched_check(case: str):
    async def check(s: RuleSession, version: int) -> None:
        await _batched(s, version, case)

    return check


def _register_batched_cases() -> None:
    from .catalogue import Rule, add

    for name, (case, source, text) in _BATCHED_CASES.items():
        add(
            Rule(
                f"txn.add-partitions.{name}",
                ADD_PARTITIONS,
                (4, 5),
                source,
                text,
                _batched_check(case),
                FAMILY,
                since="4.0",
            )
        )


_register_batched_cases()


# ---- AddOffsetsToTxn ------------------------------------------------------------------------------


@rule(
    "txn.add-offsets.adds-group",
    api=ADD_OFFSETS,
    versions=(0, 4),
    source="KafkaApis.handleAddOffsetsToTxnRequest partitionFor(groupId)",
    family=FAMILY,
)
async def add_offsets_ok(s: RuleSession, version: int) -> None:
    """AddOffsetsToTxn at the current producer id and epoch adds the group's offsets partition to the
    transaction: NONE."""
    txn = await Txn.start(s)
    body = await _retry(lambda: txn.add_offsets(s.name("g"), version), lambda b: b.error_code)
    expect_error("error_code", body.error_code, Errors.NONE)


@rule(
    "txn.add-offsets.unknown-transactional-id",
    api=ADD_OFFSETS,
    versions=(0, 4),
    source="TransactionCoordinator.handleAddPartitionsToTransaction getTransactionState None",
    family=FAMILY,
)
async def add_offsets_unknown(s: RuleSession, version: int) -> None:
    """AddOffsetsToTxn for a transactional id the coordinator does not know is refused with
    INVALID_PRODUCER_ID_MAPPING."""
    txn = await Txn.start(s)
    body = await (await txn.stranger()).add_offsets(s.name("g"), version)
    expect_error("error_code", body.error_code, Errors.INVALID_PRODUCER_ID_MAPPING)


@rule(
    "txn.add-offsets.wrong-epoch",
    api=ADD_OFFSETS,
    versions=(0, 4),
    source="KafkaApis.handleAddOffsetsToTxnRequest PRODUCER_FENCED to INVALID_PRODUCER_EPOCH below v2",
    family=FAMILY,
)
async def add_offsets_fenced(s: RuleSession, version: int) -> None:
    """AddOffsetsToTxn at an epoch other than the current one is refused with PRODUCER_FENCED
    (INVALID_PRODUCER_EPOCH below v2)."""
    txn = await Txn.start(s)
    body = await txn.add_offsets(s.name("g"), version, epoch=txn.epoch + 1)
    fenced = Errors.PRODUCER_FENCED if version >= 2 else Errors.INVALID_PRODUCER_EPOCH
    expect_error("error_code", body.error_code, fenced)
