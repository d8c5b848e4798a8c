"""The transaction rules driven alone (no event loop, no broker, no disk): random steps for a few
transactional ids (InitProducerId with and without an expected producer, AddPartitionsToTxn plain and
verify-only, AddOffsetsToTxn, EndTxn commit and abort at v4 and v5, time passing, the timed-out abort,
the markers being written, a restart that reads the state back from the records written, and
transactional ids that start close to an exhausted epoch) carried out exactly as the coordinator does:
``created``, then the records, then the markers, whose completion is a later step of its own, so other
requests arrive while a transaction is in PrepareCommit or PrepareAbort, as they do in Kafka.

Checked at every step, against Kafka's rules written out again here rather than read from the code:

- every state change is one ``TransactionState.java`` allows (``validPreviousStates``);
- the producer epoch written for a producer id never goes back;
- a request that does not carry the transaction's current producer id and epoch (a fenced producer, or
  one that missed a bump) changes nothing, and AddPartitionsToTxn, AddOffsetsToTxn and EndTxn v4 refuse
  it with PRODUCER_FENCED or INVALID_PRODUCER_ID_MAPPING;
- a transaction has no partitions once it completes (and none while Empty);
- markers are pending exactly while a transaction is in PrepareCommit or PrepareAbort, and carry the
  prepare record's producer id, epoch and partitions.

The tests at the end plant broken rules and check the machine catches each."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, Phase, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from kconform.codecs.errors import Errors
from kconform.reference_broker.transactions import rules, states
from kconform.reference_broker.transactions.decisions import (
    NO_PRODUCER,
    AddOffsets,
    AddPartitions,
    EndTxn,
    InitProducerId,
    MarkerWrite,
    ProducerIdAndEpoch,
    TxnDecision,
    TxnSettings,
    VerifyPartitions,
)
from kconform.reference_broker.transactions.log_records import decode_txn_value, encode_txn_value
from kconform.reference_broker.transactions.metadata import MAX_EPOCH, TxnMetadata
from kconform.reference_broker.transactions.states import IllegalStateTransition, TxnState

# TransactionState.java (Apache Kafka 4.x), validPreviousStates: state -> the states it is entered from.
KAFKA_VALID_PREVIOUS = {
    "Empty": {"Empty", "CompleteCommit", "CompleteAbort"},
    "Ongoing": {"Ongoing", "Empty", "CompleteCommit", "CompleteAbort"},
    "PrepareCommit": {"Ongoing"},
    "PrepareAbort": {"Ongoing", "PrepareEpochFence", "Empty", "CompleteCommit", "CompleteAbort"},
    "CompleteCommit": {"PrepareCommit"},
    "CompleteAbort": {"PrepareAbort"},
    "Dead": {"Empty", "CompleteAbort", "CompleteCommit"},
    "PrepareEpochFence": {"Ongoing"},
}

TXN_IDS = ("a", "b", "c")
PARTITIONS = (("t", 0), ("t", 1), ("u", 0))
OFFSETS_PARTITION = ("__consumer_offsets", 7)
SETTINGS = TxnSettings(max_timeout_ms=10_000, abort_interval_ms=100)
TIMEOUTS = st.sampled_from([500, 2_000, 10_000, 0, 10_001])  # the last two are refused
UNKNOWN_PRODUCER = ProducerIdAndEpoch(424_242, 0)  # an id this coordinator never handed out
_COMPLETE = (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

txn_ids = st.sampled_from(TXN_IDS)
partition_sets = st.frozensets(st.sampled_from(PARTITIONS), min_size=1)
# Which producer a client sends: mostly the newest it was handed, sometimes an older one (a zombie).
picks = st.integers(min_value=0, max_value=9)


class TxnRulesMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 1_700_000_000_000
        self.next_id = 1000
        self.txns: dict[str, TxnMetadata] = {}  # the coordinator's state
        self.pending: dict[str, MarkerWrite] = {}  # markers decided and not yet written
        self.handed_out: dict[str, list[ProducerIdAndEpoch]] = {}  # per transactional id, oldest first
        self.highest_epoch: dict[int, int] = {}  # per producer id, the highest epoch written
        self.written: dict[str, TxnMetadata] = {}  # the last record per transactional id (the log)
        self.transitions: list[tuple[str, str, str]] = []

    # --- nondeterminism passed to the rules ---------------------------------------------------------

    def allocate(self) -> int:
        self.next_id += 1
        return self.next_id

    def producer(self, txn_id: str, pick: int) -> ProducerIdAndEpoch:
        handed = self.handed_out.get(txn_id)
        if not handed:
            return UNKNOWN_PRODUCER
        return handed[-1] if pick < 7 else handed[pick % len(handed)]

    # --- carrying out a decision as the coordinator does --------------------------------------------

    def apply(self, decision: TxnDecision) -> None:
        if decision.created is not None:
            created = decision.created
            assert created.state is TxnState.EMPTY and created.producer_epoch == -1, created
            self.txns.setdefault(created.transactional_id, created)
        for record in decision.records:
            self.write(record)
        if decision.markers is not None:
            markers = decision.markers
            prepared = self.txns[markers.transactional_id]
            assert markers.transactional_id not in self.pending
            assert prepared.in_prepare, prepared
            assert markers.commit == (prepared.state is TxnState.PREPARE_COMMIT)
            assert (markers.producer_id, markers.producer_epoch) == (
                prepared.producer_id,
                prepared.producer_epoch,
            )
            assert set(markers.partitions) == prepared.partitions
            self.pending[markers.transactional_id] = markers

    def write(self, record: TxnMetadata) -> None:
        before = self.txns.get(record.transactional_id)
        assert before is not None, f"a record for {record.transactional_id!r}, which was never created"
        step = (record.transactional_id, before.state.display, record.state.display)
        self.transitions.append(step)
        event(f"{step[1]} -> {step[2]}")
        assert step[1] in KAFKA_VALID_PREVIOUS[step[2]], f"Kafka forbids {step[1]} -> {step[2]}: {record}"
        highest = self.highest_epoch.get(record.producer_id, -1)
        assert record.producer_epoch >= highest, (
            f"producer {record.producer_id}'s epoch went back from {highest}: {record}"
        )
        self.highest_epoch[record.producer_id] = record.producer_epoch
        if record.state in (*_COMPLETE, TxnState.EMPTY):
            assert not record.partitions, f"{record.state.display} with partitions: {record}"
        self.txns[record.transactional_id] = record
        self.written[record.transactional_id] = record

    def hand_out(self, txn_id: str, producer: ProducerIdAndEpoch) -> None:
        handed = self.handed_out.setdefault(txn_id, [])
        if not handed or handed[-1] != producer:
            handed.append(producer)

    def is_current(self, txn_id: str, producer: ProducerIdAndEpoch) -> bool:
        meta = self.txns.get(txn_id)
        return meta is not None and (meta.producer_id, meta.producer_epoch) == (
            producer.producer_id,
            producer.producer_epoch,
        )

    def check_not_current_changes_nothing(
        self, txn_id: str, producer: ProducerIdAndEpoch, decision: TxnDecision, *, strict: bool
    ) -> None:
        if self.is_current(txn_id, producer):
            return
        assert not decision.records and decision.markers is None, (
            f"{producer} is not {txn_id!r}'s current producer ({self.txns.get(txn_id)}), yet: {decision}"
        )
        if strict:
            assert decision.error in (Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_ID_MAPPING), decision

    # --- steps --------------------------------------------------------------------------------------

    @rule(txn_id=txn_ids, timeout_ms=TIMEOUTS, with_expected=st.booleans(), pick=picks)
    def init_producer_id(self, txn_id, timeout_ms, with_expected, pick):
        expected = self.producer(txn_id, pick) if with_expected and txn_id in self.handed_out else None
        meta = self.txns.get(txn_id)
        request = InitProducerId(txn_id, timeout_ms, expected)
        decision = rules.init_producer_id(meta, request, self.now, SETTINGS, self.allocate)
        if (
            meta is not None
            and 0 < timeout_ms <= SETTINGS.max_timeout_ms
            and expected is not None
            and expected.producer_id == meta.producer_id
            and expected.producer_epoch < meta.producer_epoch
            and expected.producer_epoch != meta.last_producer_epoch
            and meta.state in (TxnState.EMPTY, *_COMPLETE)
        ):
            assert decision.error == Errors.PRODUCER_FENCED and not decision.records, decision
        self.apply(decision)
        if decision.records and decision.records[0].producer_id != (meta.producer_id if meta else -2):
            event("InitProducerId moved to a new producer id" if meta else "InitProducerId for a new id")
        if decision.error == Errors.NONE:
            # a bump (Empty, written), or the retry of one whose answer was lost (nothing written)
            now = self.txns[txn_id]
            assert now.state is TxnState.EMPTY or not decision.records
            assert decision.producer == ProducerIdAndEpoch(now.producer_id, now.producer_epoch)
            self.hand_out(txn_id, decision.producer)

    @rule(txn_id=txn_ids, partitions=partition_sets, transaction_version=st.sampled_from([0, 2]), pick=picks)
    def add_partitions(self, txn_id, partitions, transaction_version, pick):
        producer = self.producer(txn_id, pick)
        request = AddPartitions(txn_id, *_ids(producer), partitions, transaction_version)
        decision = rules.add_partitions(self.txns.get(txn_id), request, self.now)
        self.check_not_current_changes_nothing(txn_id, producer, decision, strict=True)
        self.apply(decision)
        if decision.error == Errors.NONE:
            assert self.txns[txn_id].state is TxnState.ONGOING
            assert partitions <= self.txns[txn_id].partitions

    @rule(txn_id=txn_ids, pick=picks)
    def add_offsets(self, txn_id, pick):
        producer = self.producer(txn_id, pick)
        request = AddOffsets(txn_id, *_ids(producer), OFFSETS_PARTITION)
        decision = rules.add_offsets(self.txns.get(txn_id), request, self.now)
        self.check_not_current_changes_nothing(txn_id, producer, decision, strict=True)
        self.apply(decision)
        if decision.error == Errors.NONE:
            assert OFFSETS_PARTITION in self.txns[txn_id].partitions

    @rule(txn_id=txn_ids, partitions=partition_sets, pick=picks)
    def verify_partitions(self, txn_id, partitions, pick):
        producer = self.producer(txn_id, pick)
        meta = self.txns.get(txn_id)
        codes = rules.verify_partitions(meta, VerifyPartitions(txn_id, *_ids(producer), partitions))
        assert set(codes) == partitions
        if not self.is_current(txn_id, producer):
            assert Errors.NONE not in codes.values(), codes
        elif meta.state is TxnState.ONGOING:
            assert {tp for tp, code in codes.items() if code == Errors.NONE} == partitions & meta.partitions

    @rule(txn_id=txn_ids, commit=st.booleans(), version=st.sampled_from([4, 5]), pick=picks)
    def end_txn(self, txn_id, commit, version, pick):
        producer = self.producer(txn_id, pick)
        request = EndTxn(txn_id, *_ids(producer), commit, transaction_version=2 if version >= 5 else 0)
        decision = rules.end_txn(self.txns.get(txn_id), request, self.now, self.allocate)
        self.check_not_current_changes_nothing(txn_id, producer, decision, strict=version < 5)
        self.apply(decision)
        if decision.markers is not None:
            assert decision.markers.commit == commit
        if decision.error == Errors.NONE and version >= 5:
            assert decision.producer != NO_PRODUCER
            self.hand_out(txn_id, decision.producer)
        if version < 5:
            assert decision.producer == NO_PRODUCER

    @rule(ms=st.integers(min_value=0, max_value=3_000))
    def time_passes(self, ms):
        self.now += ms

    @rule()
    def abort_timed_out(self):
        before = dict(self.txns)
        decisions = rules.abort_timed_out(list(self.txns.values()), self.now)
        for decision in decisions:
            (record,) = decision.records
            old = before[record.transactional_id]
            assert old.state is TxnState.ONGOING and old.start_ms + old.timeout_ms < self.now
            assert record.state is TxnState.PREPARE_ABORT
            # the fenced producer's epoch is left behind (this coordinator does not bump an exhausted one)
            assert record.producer_epoch > old.producer_epoch or old.epoch_exhausted, record
            self.apply(decision)
            event("timed-out abort")
        aborted = {d.records[0].transactional_id for d in decisions}
        for txn_id, meta in before.items():
            if txn_id not in aborted and meta.state is TxnState.ONGOING:
                assert meta.start_ms + meta.timeout_ms >= self.now

    @precondition(lambda self: self.pending)
    @rule(data=st.data())
    def markers_written(self, data):
        txn_id = data.draw(st.sampled_from(sorted(self.pending)))
        markers = self.pending.pop(txn_id)
        self.apply(rules.complete_after_markers(self.txns[txn_id], markers, self.now))
        done = self.txns[txn_id]
        assert done.state is (TxnState.COMPLETE_COMMIT if markers.commit else TxnState.COMPLETE_ABORT)
        if markers.next_producer_id >= 0:
            event("EndTxn v5 moved to a new producer id")
            assert (done.producer_id, done.producer_epoch) == (markers.next_producer_id, 0)

    @rule()
    def restart(self):
        """What the log holds is all that is left: records read back through their layout, and the
        markers of a transaction caught in Prepare written again."""
        self.pending.clear()
        self.txns = {
            txn_id: decode_txn_value(txn_id, encode_txn_value(record))
            for txn_id, record in self.written.items()
        }
        for meta in list(self.txns.values()):
            if meta.in_prepare:
                event("restart in the middle of a completion")
            self.apply(rules.finish_prepared(meta))

    @precondition(lambda self: any(txn_id not in self.txns for txn_id in TXN_IDS))
    @rule(data=st.data(), state=st.sampled_from([TxnState.EMPTY, *_COMPLETE]), short_of=st.integers(2, 3))
    def epoch_nearly_exhausted(self, data, state, short_of):
        """A transactional id read back from the log a few bumps short of Short.MaxValue, so that
        both the InitProducerId and the EndTxn v5 overflows are within a few steps."""
        txn_id = data.draw(st.sampled_from([t for t in TXN_IDS if t not in self.txns]))
        meta = TxnMetadata(txn_id, self.allocate(), MAX_EPOCH - short_of, 2_000, state, start_ms=self.now)
        self.txns[txn_id] = self.written[txn_id] = meta
        self.highest_epoch[meta.producer_id] = meta.producer_epoch
        self.hand_out(txn_id, ProducerIdAndEpoch(meta.producer_id, meta.producer_epoch))

    # --- invariants ---------------------------------------------------------------------------------

    @invariant()
    def markers_are_pending_exactly_while_preparing(self):
        for txn_id, meta in self.txns.items():
            assert (txn_id in self.pending) == meta.in_prepare, (txn_id, meta, self.pending.get(txn_id))

    @invariant()
    def epochs_stay_in_a_short(self):
        for meta in self.txns.values():
            assert -1 <= meta.producer_epoch <= MAX_EPOCH, meta


def _ids(producer: ProducerIdAndEpoch) -> tuple[int, int]:
    return producer.producer_id, producer.producer_epoch


TxnRulesMachine.TestCase.settings = settings(
    max_examples=300, stateful_step_count=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_transaction_rules_keep_kafkas_invariants = TxnRulesMachine.TestCase


def test_the_state_table_is_kafkas():
    table = {
        target.display: {s.display for s in previous}
        for target, previous in states.VALID_PREVIOUS_STATES.items()
    }
    assert table == KAFKA_VALID_PREVIOUS


def test_an_illegal_transition_raises():
    meta = TxnMetadata("tx", 1, 0, 1_000, TxnState.ONGOING, frozenset({("t", 0)}))
    with pytest.raises(IllegalStateTransition, match="cannot go from Ongoing to CompleteCommit"):
        meta.transition(TxnState.COMPLETE_COMMIT)
    assert meta.transition(TxnState.PREPARE_COMMIT).state is TxnState.PREPARE_COMMIT


# --- planted rule faults: the machine must catch each ---------------------------------------------

PLANTED = settings(
    max_examples=500,
    stateful_step_count=60,
    deadline=None,
    database=None,
    report_multiple_bugs=False,
    phases=[Phase.generate],  # a failure is all these need; shrinking it only costs time
    suppress_health_check=list(HealthCheck),
)


def _expect_the_model_to_catch_it() -> None:
    with pytest.raises(AssertionError):
        run_state_machine_as_test(TxnRulesMachine, settings=PLANTED)


def test_a_commit_straight_from_ongoing_to_complete_commit_is_caught(monkeypatch):
    """The table told to allow Ongoing -> CompleteCommit, and an EndTxn v4 commit that skips
    PrepareCommit and the markers: the rules' own check lets it through, Kafka's table does not."""
    table = dict(states.VALID_PREVIOUS_STATES)
    table[TxnState.COMPLETE_COMMIT] = table[TxnState.COMPLETE_COMMIT] | {TxnState.ONGOING}
    monkeypatch.setattr(states, "VALID_PREVIOUS_STATES", table)
    kafkas = rules.end_txn

    def straight_to_complete(meta, event, now, next_producer_id):
        decision = kafkas(meta, event, now, next_producer_id)
        if decision.markers is None or not event.commit or event.transaction_version >= 2:
            return decision
        done = meta.transition(TxnState.COMPLETE_COMMIT, partitions=frozenset(), last_update_ms=now)
        return TxnDecision(records=(done,))

    monkeypatch.setattr(rules, "end_txn", straight_to_complete)
    _expect_the_model_to_catch_it()


def test_a_completion_that_keeps_its_partitions_is_caught(monkeypatch):
    kafkas = rules.complete_after_markers

    def keeps_partitions(meta, markers, now):
        (record,) = kafkas(meta, markers, now).records
        return TxnDecision(records=(replace(record, partitions=meta.partitions),))

    monkeypatch.setattr(rules, "complete_after_markers", keeps_partitions)
    _expect_the_model_to_catch_it()


def test_a_stale_epoch_let_through_is_caught(monkeypatch):
    """A producer check that compares producer ids only: a zombie's AddPartitionsToTxn and EndTxn v4
    get in."""

    def ids_only(meta, producer_id, producer_epoch):
        ok = meta is not None and meta.producer_id == producer_id
        return Errors.NONE if ok else Errors.INVALID_PRODUCER_ID_MAPPING

    monkeypatch.setattr(rules, "_producer_error", ids_only)
    _expect_the_model_to_catch_it()


def test_an_epoch_fence_that_does_not_bump_is_caught(monkeypatch):
    """A timed-out abort that keeps the producer's epoch (the zombie is not fenced)."""
    kafkas = rules._fence_and_abort

    def no_bump(meta, now):
        decision = kafkas(meta, now)
        (record,) = decision.records
        kept = replace(record, producer_epoch=meta.producer_epoch)
        return TxnDecision(
            records=(kept,), markers=replace(decision.markers, producer_epoch=kept.producer_epoch)
        )

    monkeypatch.setattr(rules, "_fence_and_abort", no_bump)
    _expect_the_model_to_catch_it()
