"""How the transaction coordinator gets its markers to partition leaders (``marker_delivery``), against
Kafka's ``TransactionMarkerChannelManager.addTxnMarkersToBrokerQueue`` (group by leader, drop deleted
partitions) and ``TransactionMarkerRequestCompletionHandler.onComplete`` (each error's fate), with the
sends and writes faked; and how a leader reads the coordinator's AddPartitionsToTxn answer
(``partition_verification``, ``AddPartitionsToTxnManager``)."""

from __future__ import annotations

import asyncio

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.messages import AddPartitionsToTxnResponse, WriteTxnMarkersResponse
from kconform.reference_broker.transactions import marker_delivery as md
from kconform.reference_broker.transactions import partition_verification as pv
from kconform.reference_broker.transactions.decisions import MarkerWrite

MARKERS = MarkerWrite(
    transactional_id="t",
    producer_id=7,
    producer_epoch=3,
    commit=True,
    partitions=(("a", 0), ("a", 1), ("b", 0)),
    transaction_version=0,
)


@pytest.mark.parametrize(
    ("code", "fate"),
    [
        (Errors.NONE, md.MarkerFate.DONE),
        (Errors.UNKNOWN_TOPIC_OR_PARTITION, md.MarkerFate.RETRY),
        (Errors.NOT_LEADER_OR_FOLLOWER, md.MarkerFate.RETRY),
        (Errors.NOT_ENOUGH_REPLICAS, md.MarkerFate.RETRY),
        (Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, md.MarkerFate.RETRY),
        (Errors.REQUEST_TIMED_OUT, md.MarkerFate.RETRY),
        (Errors.KAFKA_STORAGE_ERROR, md.MarkerFate.RETRY),
        (Errors.INVALID_PRODUCER_EPOCH, md.MarkerFate.ABANDON),
        (Errors.TRANSACTION_COORDINATOR_FENCED, md.MarkerFate.ABANDON),
        (Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT, md.MarkerFate.DROPPED),
        (Errors.UNSUPPORTED_VERSION, md.MarkerFate.DROPPED),
        (Errors.CORRUPT_MESSAGE, md.MarkerFate.ABANDON),  # fatal in Kafka: it can never be written
    ],
)
def test_each_error_has_the_fate_kafkas_completion_handler_gives_it(code, fate):
    assert md.fate_of(code) is fate


def test_partitions_are_grouped_by_leader_and_deleted_ones_dropped():
    leaders = {("a", 0): 1, ("a", 1): 2, ("b", 0): 1, ("c", 0): -1}
    routes = md.route([("a", 0), ("a", 1), ("b", 0), ("c", 0), ("gone", 0)], lambda t, p: leaders.get((t, p)))
    assert routes.by_leader == {1: (("a", 0), ("b", 0)), 2: (("a", 1),)}
    assert routes.leaderless == (("c", 0),)
    assert routes.deleted == (("gone", 0),)


def test_a_marker_request_carries_the_epochs_and_one_entry_per_topic():
    request = md.marker_request(MARKERS, 11, [("a", 0), ("a", 1)])
    (marker,) = request.markers
    assert (marker.producer_id, marker.producer_epoch, marker.coordinator_epoch) == (7, 3, 11)
    assert marker.transaction_result is True
    assert [(t.name, t.partition_indexes) for t in marker.topics] == [("a", [0, 1])]


def _answer(codes: dict[tuple[str, int], int], producer_id: int = 7) -> WriteTxnMarkersResponse:
    R = WriteTxnMarkersResponse
    topics: dict[str, list] = {}
    for (topic, index), code in codes.items():
        topics.setdefault(topic, []).append(
            R.WritableTxnMarkerPartitionResult(partition_index=index, error_code=code)
        )
    return R(
        markers=[
            R.WritableTxnMarkerResult(
                producer_id=producer_id,
                topics=[R.WritableTxnMarkerTopicResult(name=n, partitions=ps) for n, ps in topics.items()],
            )
        ]
    )


def test_a_partition_the_answer_leaves_out_is_tried_again():
    codes = md.codes_from(_answer({("a", 0): Errors.NONE}), 7, [("a", 0), ("a", 1)])
    assert codes == {("a", 0): Errors.NONE, ("a", 1): Errors.REQUEST_TIMED_OUT}
    other = md.codes_from(_answer({("a", 0): Errors.NONE}, producer_id=8), 7, [("a", 0)])
    assert other == {("a", 0): Errors.REQUEST_TIMED_OUT}


class Cluster:
    """Leaders that move, brokers that answer from a script, and a local write."""

    def __init__(self, leaders, answers, *, node_id=1):
        self.leaders = dict(leaders)
        self.answers = answers  # broker -> list of {tp: code} or exceptions, consumed in order
        self.node_id = node_id
        self.sent: list[tuple[int, list]] = []
        self.local: list[tuple] = []
        self.current = True

    def leader_of(self, topic, index):
        return self.leaders.get((topic, index))

    async def write_local(self, partitions):
        self.local.append(partitions)
        return dict.fromkeys(partitions, Errors.NONE)

    async def send(self, broker, request):
        partitions = [(t.name, p) for m in request.markers for t in m.topics for p in t.partition_indexes]
        self.sent.append((broker, partitions))
        answer = self.answers[broker].pop(0)
        if isinstance(answer, Exception):
            raise answer
        return _answer({tp: answer.get(tp, Errors.NONE) for tp in partitions})

    def deliver(self, **kwargs):
        async def no_wait(_s):
            return None

        return asyncio.run(
            md.deliver_markers(
                MARKERS,
                5,
                node_id=self.node_id,
                leader_of=self.leader_of,
                write_local=self.write_local,
                send=self.send,
                still_current=lambda: self.current,
                sleep=no_wait,
                **kwargs,
            )
        )


def test_markers_go_to_each_leader_and_local_partitions_are_written_in_place():
    cluster = Cluster({("a", 0): 1, ("a", 1): 2, ("b", 0): 3}, {2: [{}], 3: [{}]})
    assert cluster.deliver() is True
    assert cluster.local == [(("a", 0),)]
    assert sorted(cluster.sent) == [(2, [("a", 1)]), (3, [("b", 0)])]


def test_a_retriable_error_is_retried_against_the_partitions_new_leader():
    cluster = Cluster(
        {("a", 0): 2, ("a", 1): 2, ("b", 0): 2}, {2: [{("b", 0): Errors.NOT_LEADER_OR_FOLLOWER}]}
    )
    original_send = cluster.send

    async def send_then_move(broker, request):
        answer = await original_send(broker, request)
        cluster.leaders[("b", 0)] = 3  # the controller elected another leader meanwhile
        cluster.answers.setdefault(3, [{}])
        return answer

    cluster.send = send_then_move
    assert cluster.deliver() is True
    assert cluster.sent == [(2, [("a", 0), ("a", 1), ("b", 0)]), (3, [("b", 0)])]


def test_a_lost_connection_retries_every_partition_it_carried():
    cluster = Cluster({("a", 0): 2, ("a", 1): 2, ("b", 0): 2}, {2: [ConnectionError("reset"), {}]})
    assert cluster.deliver() is True
    assert [broker for broker, _ in cluster.sent] == [2, 2]
    assert cluster.sent[1][1] == [("a", 0), ("a", 1), ("b", 0)]


def test_a_fenced_producer_epoch_abandons_the_delivery():
    cluster = Cluster(
        {("a", 0): 2, ("a", 1): 2, ("b", 0): 2}, {2: [{("a", 1): Errors.INVALID_PRODUCER_EPOCH}]}
    )
    assert cluster.deliver() is False


def test_a_leaderless_partition_waits_and_a_deleted_one_needs_no_marker():
    cluster = Cluster({("a", 0): -1, ("a", 1): 2}, {2: [{}, {}]})  # ("b", 0) is gone from the metadata
    rounds = []

    async def no_wait(_s):
        rounds.append(1)
        cluster.leaders[("a", 0)] = 2  # elected after the first round

    result = asyncio.run(
        md.deliver_markers(
            MARKERS,
            5,
            node_id=1,
            leader_of=cluster.leader_of,
            write_local=cluster.write_local,
            send=cluster.send,
            still_current=lambda: True,
            sleep=no_wait,
        )
    )
    assert result is True
    assert cluster.sent == [(2, [("a", 1)]), (2, [("a", 0)])]
    assert rounds == [1]


def test_delivery_stops_once_the_coordinator_no_longer_owns_the_transaction():
    cluster = Cluster({("a", 0): 2, ("a", 1): 2, ("b", 0): 2}, {2: [{("a", 0): Errors.NOT_ENOUGH_REPLICAS}]})
    original_send = cluster.send

    async def send_then_resign(broker, request):
        answer = await original_send(broker, request)
        cluster.current = False  # the __transaction_state partition moved to another broker
        return answer

    cluster.send = send_then_resign
    assert cluster.deliver() is False
    assert len(cluster.sent) == 1


def test_the_coordinators_add_partitions_answer_is_read_per_partition():
    R = AddPartitionsToTxnResponse
    response = R(
        results_by_transaction=[
            R.AddPartitionsToTxnResult(
                transactional_id="t",
                topic_results=[
                    R.AddPartitionsToTxnTopicResult(
                        name="a",
                        results_by_partition=[
                            R.AddPartitionsToTxnPartitionResult(
                                partition_index=0, partition_error_code=Errors.TRANSACTION_ABORTABLE
                            )
                        ],
                    )
                ],
            )
        ]
    )
    assert pv.codes_from(response, "t", {("a", 0), ("a", 1)}) == {
        ("a", 0): Errors.TRANSACTION_ABORTABLE,
        ("a", 1): Errors.COORDINATOR_NOT_AVAILABLE,
    }
    failed = R(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED)
    assert pv.codes_from(failed, "t", {("a", 0)}) == {("a", 0): Errors.CLUSTER_AUTHORIZATION_FAILED}


def test_a_leader_sends_v4_to_verify_and_v5_to_add():
    verify = pv.request_for("t", 7, 3, {("a", 1), ("a", 0)}, True)
    (txn,) = verify.transactions
    assert (txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.verify_only) == ("t", 7, 3, True)
    assert [(t.name, t.partitions) for t in txn.topics] == [("a", [0, 1])]
    assert (pv.VERIFY_VERSION, pv.ADD_VERSION) == (4, 5)
