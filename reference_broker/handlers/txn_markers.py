"""WriteTxnMarkers (key 27): the transaction coordinator's request to partition leaders to write
COMMIT or ABORT markers (``KafkaApis.handleWriteTxnMarkersRequest``). Unknown partitions get
UNKNOWN_TOPIC_OR_PARTITION; epoch checks are the producer state's."""

from __future__ import annotations

from kconform.codecs.messages import WriteTxnMarkersResponse

from ..txn_markers import write_txn_markers
from . import handles


@handles(27)
async def write_markers(broker, ctx, request) -> WriteTxnMarkersResponse:
    R = WriteTxnMarkersResponse  # noqa: N806 - the nested result classes hang off the message class
    results = []
    for marker in request.markers:
        wanted = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
        codes = write_txn_markers(
            broker,
            producer_id=marker.producer_id,
            producer_epoch=marker.producer_epoch,
            coordinator_epoch=marker.coordinator_epoch,
            commit=marker.transaction_result,
            partitions=wanted,
        )
        results.append(
            R.WritableTxnMarkerResult(
                producer_id=marker.producer_id,
                topics=[
                    R.WritableTxnMarkerTopicResult(
                        name=t.name,
                        partitions=[
                            R.WritableTxnMarkerPartitionResult(
                                partition_index=p, error_code=codes[(t.name, p)]
                            )
                            for p in t.partition_indexes
                        ],
                    )
                    for t in marker.topics
                ],
            )
        )
    return WriteTxnMarkersResponse(markers=results)
