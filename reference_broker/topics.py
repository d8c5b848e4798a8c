"""The topics this broker knows: names, ids, partitions and their leaders, per-topic config overrides.

Persisted as one JSON file written atomically (temp file, fsync, rename), so a crash leaves either
the old or the new state. Replication and a controller come later; this registry is the single
node's view of the cluster metadata."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["PartitionState", "TopicState", "TopicRegistry"]


@dataclass(slots=True)
class PartitionState:
    index: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]


@dataclass(slots=True)
class TopicState:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionState]
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


class TopicRegistry:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._by_name: dict[str, TopicState] = {}
        self._by_id: dict[uuid.UUID, TopicState] = {}
        if path.exists():
            self._load()

    def _load(self) -> None:
        try:
            doc = json.loads(self.path.read_text())
            for raw in doc["topics"]:
                topic = TopicState(
                    name=raw["name"],
                    topic_id=uuid.UUID(raw["topic_id"]),
                    partitions=[PartitionState(**p) for p in raw["partitions"]],
                    configs=dict(raw.get("configs", {})),
                )
                self._index(topic)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RuntimeError(
                f"cannot read the topic metadata in {self.path} ({exc}); restore it from a backup or move it "
                "away to start with no topics (the partition logs stay on disk)"
            ) from exc

    def save(self) -> None:
        doc = {"version": 0, "topics": [self._dump(t) for t in self._by_name.values()]}
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as fh:
            json.dump(doc, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)

    @staticmethod
    def _dump(topic: TopicState) -> dict:
        return {
            "name": topic.name,
            "topic_id": str(topic.topic_id),
            "partitions": [asdict(p) for p in topic.partitions],
            "configs": topic.configs,
        }

    def _index(self, topic: TopicState) -> None:
        self._by_name[topic.name] = topic
        self._by_id[topic.topic_id] = topic

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def __iter__(self):
        return iter(list(self._by_name.values()))

    def __len__(self) -> int:
        return len(self._by_name)

    def get(self, name: str) -> TopicState | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicState | None:
        return self._by_id.get(topic_id)

    def create(
        self, name: str, partitions: int, replicas: list[list[int]], configs: dict[str, str]
    ) -> TopicState:
        if name in self._by_name:
            raise ValueError(f"topic {name} exists")
        topic_id = uuid.uuid4()
        while topic_id in self._by_id or topic_id.int == 0:
            topic_id = uuid.uuid4()
        topic = TopicState(
            name=name,
            topic_id=topic_id,
            partitions=[
                PartitionState(
                    index=i,
                    leader=replicas[i][0],
                    leader_epoch=0,
                    replicas=replicas[i],
                    isr=list(replicas[i]),
                )
                for i in range(partitions)
            ],
            configs=dict(configs),
        )
        self._index(topic)
        self.save()
        return topic

    def add_partitions(self, name: str, replicas: list[list[int]]) -> TopicState:
        topic = self._by_name[name]
        start = len(topic.partitions)
        for offset, assignment in enumerate(replicas):
            topic.partitions.append(
                PartitionState(start + offset, assignment[0], 0, list(assignment), list(assignment))
            )
        self.save()
        return topic

    def set_configs(self, name: str, configs: dict[str, str]) -> None:
        self._by_name[name].configs = dict(configs)
        self.save()

    def delete(self, name: str) -> TopicState:
        topic = self._by_name.pop(name)
        self._by_id.pop(topic.topic_id, None)
        self.save()
        return topic
