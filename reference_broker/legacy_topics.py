"""Data directories from before the metadata log: the single node kept its topics in
``kconform-metadata.json`` and its producer id reservation in ``kconform-producer-ids``. On the first
start of a combined node over such a directory both are written into the metadata log (the same topic
ids, partitions and config overrides; producer ids continuing past the reserved ones) and the files
are renamed ``*.imported``, so no topic or partition log is lost and nothing is imported twice."""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

from kconform.codecs.metadata_records import ProducerIdsRecord

__all__ = ["import_legacy_topics"]

log = logging.getLogger(__name__)
TOPICS_FILE = "kconform-metadata.json"
PRODUCER_IDS_FILE = "kconform-producer-ids"


def import_legacy_topics(data_dir: Path, controller) -> int:
    """Import what the files hold into the controller's log; returns the topics imported."""
    imported = 0
    topics_file = Path(data_dir) / TOPICS_FILE
    if topics_file.exists():
        try:
            doc = json.loads(topics_file.read_text())
            topics = list(doc["topics"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RuntimeError(
                f"cannot read the topic metadata in {topics_file} ({exc}); restore it from a backup or move "
                "it away to start with no topics (the partition logs stay on disk)"
            ) from exc
        live = controller.live_broker_ids
        for raw in topics:
            if raw["name"] in controller.image:
                continue
            replicas = [
                [b for b in p["replicas"] if b in live] or live[:1]
                for p in sorted(raw["partitions"], key=lambda p: p["index"])
            ]
            controller.create_topic(
                raw["name"], replicas, dict(raw.get("configs", {})), topic_id=uuid.UUID(raw["topic_id"])
            )
            imported += 1
        topics_file.rename(topics_file.with_name(TOPICS_FILE + ".imported"))
        log.info("imported %d topics from %s into the metadata log", imported, topics_file)
    ids_file = Path(data_dir) / PRODUCER_IDS_FILE
    if ids_file.exists():
        try:
            reserved = int(ids_file.read_text().strip())
        except ValueError:
            reserved = 0
        if reserved > controller.image.next_producer_id:
            controller.append(
                [ProducerIdsRecord(broker_id=controller.node_id, broker_epoch=-1, next_producer_id=reserved)]
            )
        ids_file.rename(ids_file.with_name(PRODUCER_IDS_FILE + ".imported"))
    return imported
