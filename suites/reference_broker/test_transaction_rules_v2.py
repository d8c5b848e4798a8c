"""Kafka's transaction rules for transactions v2 (KIP-890 part 2), against a reference broker node in
this process: EndTxn v5 and its epoch bumps, AddPartitionsToTxn v4-5, TxnOffsetCommit v5,
ListTransactions v2's RE2 filter and WriteTxnMarkers for transaction version 2."""

from __future__ import annotations

from dataclasses import replace

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ListTransactionsRequest,
    WriteTxnMarkersRequest,
)
from kconform.codecs.records import iter_batches

from ..support.txn_rules_cluster import (
    LIST_TXNS,
    WRITE_MARKERS,
    Cluster,
    run,
)

# ---- transactions v2 (KIP-890 part 2): EndTxn v5, AddPartitionsToTxn v4-5, TxnOffsetCommit v5 -----------
#
# Kafka takes the client's transaction version from the request version, whatever transaction.version
# the cluster finalized (KafkaApis.handleEndTxnRequest: TransactionVersion.transactionVersionForEndTxn;
# handleAddPartitionsToTxnRequest: transactionVersionForAddPartitionsToTxn), and ApiVersions offers these
# versions at every level. The reference broker's level is below 1, so these are the answers of such a
# Kafka broker, which are also those of a broker at level 2.


def test_end_txn_v5_bumps_the_epoch_and_answers_with_it(tmp_path):
    """TransactionCoordinator.endTransaction (TV2): prepareAbortOrCommit bumps the epoch, the markers
    carry the bumped one, and the answer (KafkaApis.handleEndTxnRequest) has the new producer id and
    epoch; EndTxn v4 keeps the epoch and answers none (endTransactionWithTV1)."""

    async def scenario(c: Cluster):
        pid, epoch = await c.init_ok()
        await c.add_partitions(pid, epoch, [("t", 0)])
        await c.produce(pid, epoch, 0, [b"a"])
        committed = await c.end_v(pid, epoch, True)
        batches = list(iter_batches(bytes((await c.fetch(isolation=0)).records or b"")))
        state = await c.describe()
        # the next transaction at the bumped epoch, ended with v4: no bump, no ids in the answer
        await c.add_partitions(pid, epoch + 1, [("t", 0)])
        old_style = await c.end_v(pid, epoch + 1, False, version=4)
        return committed, batches, state, old_style, pid, epoch

    committed, batches, state, old_style, pid, epoch = run(tmp_path, scenario)
    assert (committed.error_code, committed.producer_id, committed.producer_epoch) == (0, pid, epoch + 1)
    data, marker = batches
    assert (data.producer_epoch, marker.is_control, marker.producer_epoch) == (epoch, True, epoch + 1)
    assert (state.transaction_state, state.producer_epoch) == ("CompleteCommit", epoch + 1)
    assert (old_style.error_code, old_style.producer_id, old_style.producer_epoch) == (0, -1, -1)


def test_end_txn_v5_retries_and_empty_aborts(tmp_path):
    """The TV2 table of TransactionCoordinator.endTransaction: a retry (the epoch one below the bumped
    one) of the same result is NONE with the current producer id and epoch, of the other result
    INVALID_TXN_STATE; an abort with no transaction open (Empty, CompleteCommit, CompleteAbort) bumps
    the epoch; a commit with none is INVALID_TXN_STATE; any other epoch is PRODUCER_FENCED; an unknown
    transactional id INVALID_PRODUCER_ID_MAPPING. Errors answer producer id and epoch -1."""

    async def scenario(c: Cluster):
        pid, e = await c.init_ok()
        out = {"empty_commit": await c.end_v(pid, e, True)}
        out["empty_abort"] = await c.end_v(pid, e, False)  # Empty: e -> e+1
        out["abort_retry"] = await c.end_v(pid, e, False)  # retry of that abort
        out["commit_after_abort_retry"] = await c.end_v(pid, e, True)
        out["abort_again"] = await c.end_v(pid, e + 1, False)  # CompleteAbort at the current epoch: e+2
        await c.add_partitions(pid, e + 2, [("t", 0)])
        out["commit"] = await c.end_v(pid, e + 2, True)  # e+3
        out["commit_retry"] = await c.end_v(pid, e + 2, True)
        out["abort_retry_of_commit"] = await c.end_v(pid, e + 2, False)
        out["fenced"] = await c.end_v(pid, e + 1, True)
        out["unknown"] = await c.end_v(pid, e, True, txn_id="nobody")
        return pid, e, out

    pid, e, out = run(tmp_path, scenario)
    answers = {k: (v.error_code, v.producer_id, v.producer_epoch) for k, v in out.items()}
    assert answers == {
        "empty_commit": (Errors.INVALID_TXN_STATE, -1, -1),
        "empty_abort": (Errors.NONE, pid, e + 1),
        "abort_retry": (Errors.NONE, pid, e + 1),
        "commit_after_abort_retry": (Errors.INVALID_TXN_STATE, -1, -1),
        "abort_again": (Errors.NONE, pid, e + 2),
        "commit": (Errors.NONE, pid, e + 3),
        "commit_retry": (Errors.NONE, pid, e + 3),
        "abort_retry_of_commit": (Errors.INVALID_TXN_STATE, -1, -1),
        "fenced": (Errors.PRODUCER_FENCED, -1, -1),
        "unknown": (Errors.INVALID_PRODUCER_ID_MAPPING, -1, -1),
    }


def test_end_txn_v5_with_the_epoch_exhausted_moves_to_a_new_producer_id(tmp_path):
    """TransactionCoordinator.endTransaction (TV2): at an exhausted epoch (Short.MaxValue - 1) the
    completion takes a new producer id at epoch 0 (prepareComplete with nextProducerId), and a retry
    from the old id at the old epoch is recognised (retryOnOverflow): NONE with the new id."""

    async def scenario(c: Cluster):
        pid, _ = await c.init_ok()
        txns = c.node.transaction_coordinator.txns
        txns["tx"] = replace(txns["tx"], producer_epoch=32766)  # as after 32766 bumps
        first = await c.end_v(pid, 32766, False)
        retry = await c.end_v(pid, 32766, False)
        return pid, first, retry

    pid, first, retry = run(tmp_path, scenario)
    assert first.error_code == Errors.NONE and first.producer_id != pid and first.producer_epoch == 0
    assert (retry.error_code, retry.producer_id, retry.producer_epoch) == (0, first.producer_id, 0)


def test_add_partitions_to_txn_v4_and_v5_verify_and_add_alike(tmp_path):
    """KafkaApis.handleAddPartitionsToTxnRequest: v4 and v5 are handled alike (v5 only tells the sending
    broker it may pass TRANSACTION_ABORTABLE on). Unknown partitions fail the transaction's entry first
    (OPERATION_NOT_ATTEMPTED for the rest), verify-only or not; verify-only is
    TransactionCoordinator.handleVerifyPartitionsInTransaction: NONE for a partition in the transaction,
    TRANSACTION_ABORTABLE for one outside it, PRODUCER_FENCED for another epoch; without verify-only the
    partitions are added."""

    async def scenario(c: Cluster):
        pid, epoch = await c.init_ok()
        out = {}
        for version in (4, 5):
            out[version] = {
                "outside": await c.add_partitions_v4(
                    pid, epoch, [("t", 0)], verify_only=True, version=version
                ),
                "unknown": await c.add_partitions_v4(
                    pid, epoch, [("t", 0), ("gone", 0)], verify_only=True, version=version
                ),
                "fenced": await c.add_partitions_v4(
                    pid, epoch + 1, [("t", 0)], verify_only=True, version=version
                ),
            }
        added = await c.add_partitions_v4(pid, epoch, [("t", 0)], verify_only=False)
        inside = await c.add_partitions_v4(pid, epoch, [("t", 0)], verify_only=True, version=4)
        return out, added, inside, (await c.describe()).transaction_state

    out, added, inside, state = run(tmp_path, scenario)
    for version in (4, 5):
        assert out[version] == {
            "outside": {("t", 0): Errors.TRANSACTION_ABORTABLE},
            "unknown": {
                ("t", 0): Errors.OPERATION_NOT_ATTEMPTED,
                ("gone", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
            },
            "fenced": {("t", 0): Errors.PRODUCER_FENCED},
        }, version
    assert added == inside == {("t", 0): Errors.NONE}
    assert state == "Ongoing"


def test_txn_offset_commit_v5_adds_the_offsets_partition_itself(tmp_path):
    """CoordinatorPartitionWriter.maybeStartTransactionVerification with
    AddPartitionsToTxnManager.txnOffsetCommitRequestVersionToTransactionSupportedOperation: v5 is
    ADD_PARTITION, so the group's __consumer_offsets partition joins the transaction without
    AddOffsetsToTxn, and the offset counts once the transaction commits."""

    async def scenario(c: Cluster):
        pid, epoch = await c.init_ok()
        code = await c.txn_offset_commit(pid, epoch, 7, version=5)
        described = await c.describe()
        before = await c.committed()
        ended = await c.end_v(pid, epoch, True)
        return code, described, before, ended.error_code, await c.committed()

    code, described, before, ended, after = run(tmp_path, scenario)
    assert code == Errors.NONE
    assert described.transaction_state == "Ongoing"
    assert [t.topic for t in described.topics] == ["__consumer_offsets"]
    assert (before, ended, after) == (-1, Errors.NONE, 7)


def test_txn_offset_commit_before_v5_needs_the_partition_in_the_transaction(tmp_path):
    """The same verification for v0-4 (verify-only, with transaction.partition.verification.enable):
    an offsets partition outside the transaction is TRANSACTION_ABORTABLE for v4 (GENERIC_ERROR_SUPPORTED)
    and INVALID_TXN_STATE before (DEFAULT_ERROR, AddPartitionsToTxnManager's translation); a stale epoch is
    INVALID_PRODUCER_EPOCH (PRODUCER_FENCED translated). With verification off nothing is checked."""

    async def scenario(c: Cluster):
        pid, epoch = await c.init_ok()
        v4 = await c.txn_offset_commit(pid, epoch, 1, version=4)
        v3 = await c.txn_offset_commit(pid, epoch, 1, version=3)
        fenced = await c.txn_offset_commit(pid, epoch - 1 if epoch else epoch + 1, 1, version=3)
        return v4, v3, fenced

    assert run(tmp_path, scenario) == (
        Errors.TRANSACTION_ABORTABLE,
        Errors.INVALID_TXN_STATE,
        Errors.INVALID_PRODUCER_EPOCH,
    )

    async def unverified(c: Cluster):
        pid, epoch = await c.init_ok()
        return await c.txn_offset_commit(pid, epoch, 1, version=3)

    off = {"transaction.partition.verification.enable": "false"}
    assert run(tmp_path / "off", unverified, **off) == Errors.NONE


def test_list_transactions_v2_filters_by_an_re2_pattern(tmp_path):
    """TransactionStateManager.listTransactionStates: the pattern is compiled with RE2/J and must match
    the whole transactional id; an empty one filters nothing; one RE2/J refuses (here a lookahead, which
    java.util.regex would take) fails the request with INVALID_REGULAR_EXPRESSION and nothing else
    (ListTransactionsRequest.getErrorResponse). The duration filter keeps a transaction whatever its
    state once ``now - its start time`` passes the duration: an Empty one (start -1) too."""

    def listing(pattern, *, duration=-1, version=2):
        return ListTransactionsRequest(
            state_filters=[],
            producer_id_filters=[],
            duration_filter=duration,
            transactional_id_pattern=pattern,
        )

    async def scenario(c: Cluster):
        for txn_id in ("orders-1", "orders-22", "payments"):
            await c.init_ok(txn_id)
        out = {}
        for name, pattern in (
            ("digits", "orders-[0-9]"),
            ("all", ""),
            ("prefix", "orders"),
            ("alt", "pay.*|x"),
        ):
            body = await c.client.call(LIST_TXNS, 2, listing(pattern))
            out[name] = sorted(t.transactional_id for t in body.transaction_states)
        bad = await c.client.call(LIST_TXNS, 2, listing("(?=orders).*"))
        out["bad"] = (bad.error_code, bad.transaction_states, bad.unknown_state_filters)
        long_ago = await c.client.call(LIST_TXNS, 1, listing(None, duration=1))
        out["duration"] = sorted(t.transactional_id for t in long_ago.transaction_states)
        return out

    out = run(tmp_path, scenario)
    assert out["digits"] == ["orders-1"]
    assert out["all"] == ["orders-1", "orders-22", "payments"]
    assert out["prefix"] == []
    assert out["alt"] == ["payments"]
    assert out["bad"] == (Errors.INVALID_REGULAR_EXPRESSION, [], [])
    assert out["duration"] == ["orders-1", "orders-22", "payments"]


def test_write_txn_markers_v2_checks_the_epoch_strictly_for_transaction_version_2(tmp_path):
    """KafkaApis.handleWriteTxnMarkersRequest hands each v2 marker's transaction version to the append;
    ProducerAppendInfo.checkProducerEpoch then wants a marker epoch above the producer's for version 2
    (the coordinator bumped it when the transaction ended) and at least the producer's before it."""

    def marker(epoch: int, transaction_version: int):
        return WriteTxnMarkersRequest(
            markers=[
                WriteTxnMarkersRequest.WritableTxnMarker(
                    producer_id=7,
                    producer_epoch=epoch,
                    transaction_result=True,
                    topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name="t", partition_indexes=[0])],
                    coordinator_epoch=0,
                    transaction_version=transaction_version,
                )
            ]
        )

    async def scenario(c: Cluster):
        codes = []
        # the producer's data is at epoch 3 each round; the marker: (request version, epoch, its version)
        for seq, (version, epoch, tv) in enumerate(((2, 3, 2), (1, 3, 2), (2, 4, 2))):
            assert (await c.produce(7, 3, seq, [b"x"])).error_code == Errors.NONE
            body = await c.client.call(WRITE_MARKERS, version, marker(epoch, tv))
            codes.append(body.markers[0].topics[0].partitions[0].error_code)
            if codes[-1] != Errors.NONE:  # close the transaction for the next round
                await c.client.call(WRITE_MARKERS, 1, marker(epoch, 0))
        return codes

    off = {"transaction.partition.verification.enable": "false"}
    codes = run(tmp_path, scenario, kafka_version="4.3", **off)
    # v2 with version 2 at the data's epoch: refused; v1 (read as version 0): taken; v2 above it: taken
    assert codes == [Errors.INVALID_PRODUCER_EPOCH, Errors.NONE, Errors.NONE]
