"""The client's metadata keeps the newest leader epoch it has seen (KIP-320, Kafka's
``Metadata.updateLatestMetadata``): a broker behind the cluster, such as a deposed leader cut off from
the controller that still names itself, cannot send the client back to it."""

from __future__ import annotations

import uuid

from kconform.codecs.messages import MetadataResponse
from kconform.harness.client.metadata import ClusterMetadata

TOPIC_ID = uuid.UUID(int=7)


def answer(*partitions: tuple[int, int, int], topic_id: uuid.UUID = TOPIC_ID) -> MetadataResponse:
    """Partitions as (index, leader, leader epoch)."""
    Part = MetadataResponse.MetadataResponsePartition
    return MetadataResponse(
        brokers=[
            MetadataResponse.MetadataResponseBroker(node_id=n, host="h", port=9090 + n) for n in (1, 2, 3)
        ],
        topics=[
            MetadataResponse.MetadataResponseTopic(
                name="t",
                topic_id=topic_id,
                partitions=[
                    Part(partition_index=i, leader_id=leader, leader_epoch=epoch, replica_nodes=[1, 2, 3])
                    for i, leader, epoch in partitions
                ],
            )
        ],
    )


def test_an_answer_with_an_older_leader_epoch_does_not_move_the_leader_back():
    known = ClusterMetadata.from_response(answer((0, 3, 5), (1, 1, 2)))
    behind = ClusterMetadata.from_response(
        answer((0, 2, 4), (1, 2, 3)), known
    )  # broker 2 still leads epoch 4
    assert (behind.leader_for("t", 0), behind.leader_epoch("t", 0)) == (3, 5)
    assert (behind.leader_for("t", 1), behind.leader_epoch("t", 1)) == (2, 3)  # newer: taken


def test_an_unknown_epoch_or_a_recreated_topic_is_taken_as_answered():
    known = ClusterMetadata.from_response(answer((0, 3, 5)))
    unknown = ClusterMetadata.from_response(answer((0, 2, -1)), known)
    assert unknown.leader_for("t", 0) == 2
    recreated = ClusterMetadata.from_response(answer((0, 1, 0), topic_id=uuid.UUID(int=8)), known)
    assert (recreated.leader_for("t", 0), recreated.leader_epoch("t", 0)) == (1, 0)
