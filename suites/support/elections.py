"""Leader elections in a combined node, made as its controller makes them."""

from __future__ import annotations

from kconform.codecs.metadata_records import PartitionChangeRecord


def bump_leader_epoch(node, topic: str, index: int, epoch: int) -> None:
    """Re-elect the partition's leader (a PartitionChangeRecord naming it) until its leader epoch is
    ``epoch``; the node's replica takes each new epoch up at once."""
    controller = node.controller_node.controller
    while True:
        info = node.topics.get(topic)
        partition = info.partitions[index]
        if partition.leader_epoch >= epoch:
            return
        controller.append(
            [PartitionChangeRecord(partition_id=index, topic_id=info.topic_id, leader=partition.leader)]
        )
