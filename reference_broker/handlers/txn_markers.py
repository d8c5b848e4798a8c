"""WriteTxnMarkers (key 27): a transaction coordinator asks this leader to write COMMIT or ABORT
markers (``KafkaApis.handleWriteTxnMarkersRequest``). Each marker is written to its partitions with
acks=-1 and ``request.timeout.ms`` (``write_markers_replicated``), so a partition answers NONE only once
its in-sync replicas have the marker; errors are per partition (UNKNOWN_TOPIC_OR_PARTITION,
NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS[_AFTER_APPEND], REQUEST_TIMED_OUT, and the producer state's
INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED). Kafka collects the results in
a map keyed by producer id, so the response has one result per producer id: markers of the same producer
are merged (a partition named twice keeps the last answer), and a marker naming no partition has none.

v2 (KIP-1228) gives each marker the transaction version of the transaction it ends; Kafka hands it to
the append (``replicaManager.appendRecords(..., transactionVersion = marker.transactionVersion)``, and to
``groupCoordinator.completeTransaction`` for ``__consumer_offsets``), where from version 2 on a marker's
producer epoch must be above the producer's (``ProducerAppendInfo.appendEndTxnMarker``: the epoch was
bumped when the transaction ended). v1 markers are read as version 0
(``WriteTxnMarkersRequest.markers``: the ignorable field is 0 there)."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import WriteTxnMarkersResponse

from ..security.acls import Operation
from ..transactions.marker_writer import write_markers_replicated
from . import handles
from .admin_access import cluster_allowed

R = WriteTxnMarkersResponse


@handles(27)
async def write_markers(broker, ctx, request) -> WriteTxnMarkersResponse:
    by_producer: dict[int, dict[tuple[str, int], int]] = {}
    # KafkaApis.handleWriteTxnMarkersRequest: ALTER on the cluster, else CLUSTER_ACTION; without either
    # the request's error response, every partition of every marker refused
    if not (
        cluster_allowed(broker, ctx, Operation.ALTER)
        or cluster_allowed(broker, ctx, Operation.CLUSTER_ACTION)
    ):
        for marker in request.markers:
            refused = {
                (t.name, p): Errors.CLUSTER_AUTHORIZATION_FAILED
                for t in marker.topics
                for p in t.partition_indexes
            }
            by_producer.setdefault(marker.producer_id, {}).update(refused)
        return WriteTxnMarkersResponse(markers=[_result(pid, codes) for pid, codes in by_producer.items()])
    for marker in request.markers:
        transaction_version = marker.transaction_version if ctx.api_version >= 2 else 0
        wanted = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
        if not wanted:
            continue
        codes = await write_markers_replicated(
            broker,
            producer_id=marker.producer_id,
            producer_epoch=marker.producer_epoch,
            coordinator_epoch=marker.coordinator_epoch,
            commit=marker.transaction_result,
            partitions=wanted,
            transaction_version=transaction_version,
            timeout_s=int(broker.config["request.timeout.ms"]) / 1000,
        )
        by_producer.setdefault(marker.producer_id, {}).update(codes)
    return WriteTxnMarkersResponse(markers=[_result(pid, codes) for pid, codes in by_producer.items()])


def _result(producer_id: int, codes: dict[tuple[str, int], int]) -> R.WritableTxnMarkerResult:
    topics: dict[str, list] = {}
    for (topic, index), code in codes.items():
        topics.setdefault(topic, []).append(
            R.WritableTxnMarkerPartitionResult(partition_index=index, error_code=code)
        )
    return R.WritableTxnMarkerResult(
        producer_id=producer_id,
        topics=[
            R.WritableTxnMarkerTopicResult(name=name, partitions=parts) for name, parts in topics.items()
        ],
    )
