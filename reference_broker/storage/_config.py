"""``LogConfig``: the topic configs the storage layer acts on, under Kafka's names and defaults
(``LogConfig.java`` in Kafka's storage module). Everything else about a topic (timestamp type, max
message size, compression) is checked by the caller before it appends."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

__all__ = ["LONG_MAX", "LogConfig"]

LONG_MAX = (1 << 63) - 1

# Kafka topic config name -> LogConfig field. producer.id.expiration.ms is a broker config in Kafka;
# it is here because the log applies it.
_KAFKA_NAMES = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "segment.jitter.ms": "segment_jitter_ms",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "segment.index.bytes": "segment_index_bytes",
    "flush.messages": "flush_messages",
    "flush.ms": "flush_ms",
    "file.delete.delay.ms": "file_delete_delay_ms",
    "cleanup.policy": "cleanup_policy",
    "producer.id.expiration.ms": "producer_id_expiration_ms",
}


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Per-partition storage settings. ``retention_ms`` and ``retention_bytes`` of -1 mean unlimited;
    ``cleanup_policy`` is a comma-separated list as in Kafka (only ``delete`` changes what the log
    does: without it, retention deletes nothing but segments below the log start offset)."""

    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    retention_ms: int = 604800000
    retention_bytes: int = -1
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10485760
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60000
    cleanup_policy: str = "delete"
    producer_id_expiration_ms: int = 86400000

    def __post_init__(self) -> None:
        for name in ("segment_bytes", "segment_ms", "flush_messages", "flush_ms"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        for name in ("segment_jitter_ms", "index_interval_bytes", "file_delete_delay_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, not {getattr(self, name)}")
        if self.segment_index_bytes < 4:
            raise ValueError(f"segment_index_bytes must be at least 4, not {self.segment_index_bytes}")
        for name in ("retention_ms", "retention_bytes"):
            if getattr(self, name) < -1:
                raise ValueError(f"{name} must be -1 (unlimited) or more, not {getattr(self, name)}")

    @property
    def delete_enabled(self) -> bool:
        return "delete" in {p.strip() for p in self.cleanup_policy.split(",")}

    @classmethod
    def from_topic_configs(cls, configs: Mapping[str, str]) -> LogConfig:
        """Build from Kafka topic config strings (``{"segment.bytes": "1048576"}``); names the storage
        layer does not use are ignored, so a topic's whole config map can be passed."""
        kwargs: dict[str, object] = {}
        types = {f.name: f.type for f in fields(cls)}
        for name, value in configs.items():
            field_name = _KAFKA_NAMES.get(name)
            if field_name is None:
                continue
            if types[field_name] in (int, "int"):
                try:
                    kwargs[field_name] = int(value)
                except ValueError:
                    raise ValueError(f"topic config {name}={value!r} is not an integer") from None
            else:
                kwargs[field_name] = str(value)
        return cls(**kwargs)
