"""Which records read ahead could break one of Kafka's per-record rules (LogValidator.validateRecord:
validateKey, validateTimestamp) for any clock reading in a window, and what of them the rules and
their messages need.

The read-ahead (``_scan``) runs before the append, whose clock reading it cannot know; it can know that
the append reads the clock later, and assumes no later than ``WINDOW_MS`` after it started. A record
that passes every rule at every reading in that window needs no second look; the others (the
suspects) are kept as ``RecordShape``s, a few numbers each, and the log validator (``_log``) judges them
with its own clock, exactly as it would judge the records read whole. An append outside the window
reads the records whole, as before."""

from __future__ import annotations

from dataclasses import dataclass

from kconform.codecs.records import Record, TimestampType

from ._types import LogValidationConfig

__all__ = ["WINDOW_MS", "RecordShape", "RuleWindow"]

WINDOW_MS = 5 * 60_000
_NO_TIMESTAMP = -1
_SAFE = 2**62  # within this, ``now - timestamp`` cannot wrap Java's long


class _Size:
    """Stands for a key or value whose bytes were dropped: the record texts only read its length."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"<{self.size} bytes>"


class RecordShape:
    """A record as the rules see it: its index in the batch, offset, timestamp, and whether its key
    and value are null and how long (``Record``'s attribute names, so ``RecordRules`` reads it)."""

    __slots__ = ("index", "offset", "timestamp", "key", "value")

    def __init__(self, index: int, record: Record, timestamp: int) -> None:
        self.index = index
        self.offset = record.offset
        self.timestamp = timestamp
        self.key = None if record.key is None else _Size(len(record.key))
        self.value = None if record.value is None else _Size(len(record.value))

    def __repr__(self) -> str:
        return f"RecordShape(index={self.index}, offset={self.offset}, timestamp={self.timestamp})"


@dataclass(frozen=True, slots=True)
class RuleWindow:
    """The rules of ``config`` for a batch of ``batch_timestamp_type``, at clock readings from
    ``now_from_ms`` to ``now_until_ms``."""

    config: LogValidationConfig
    batch_timestamp_type: TimestampType
    now_from_ms: int
    now_until_ms: int

    @classmethod
    def starting(cls, config: LogValidationConfig, batch_timestamp_type: TimestampType, now_ms: int):
        return cls(config, batch_timestamp_type, now_ms, now_ms + WINDOW_MS)

    def covers(self, config: LogValidationConfig, now_ms: int) -> bool:
        """Whether suspects gathered for this window are all an append with ``config`` at ``now_ms``
        needs to judge."""
        return config == self.config and self.now_from_ms <= now_ms <= self.now_until_ms

    def clears(self, lowest: int | None, highest: int | None, has_no_timestamp: bool, null_key: bool) -> bool:
        """Whether records with timestamps in [lowest, highest] (NO_TIMESTAMP aside) pass every rule at
        every reading in the window: then none of them is a suspect."""
        config = self.config
        if config.compacted and null_key:
            return False
        log_append_batch = self.batch_timestamp_type == TimestampType.LOG_APPEND_TIME
        if config.log_timestamp_type != TimestampType.CREATE_TIME:
            return not log_append_batch
        if has_no_timestamp and log_append_batch:
            return False
        return lowest is None or (self._in_bounds(lowest) and self._in_bounds(highest))

    def suspect(self, record: Record, timestamp: int) -> bool:
        """Whether ``record`` (with ``timestamp`` as Java's long leaves it) could break a rule."""
        config = self.config
        if config.compacted and record.key is None:
            return True
        if config.log_timestamp_type == TimestampType.CREATE_TIME and timestamp != _NO_TIMESTAMP:
            return not self._in_bounds(timestamp)
        return self.batch_timestamp_type == TimestampType.LOG_APPEND_TIME

    def _in_bounds(self, timestamp: int) -> bool:
        earliest, latest = self.now_from_ms, self.now_until_ms
        if not all(-_SAFE < value < _SAFE for value in (earliest, latest, timestamp)):
            return False  # near the wrap-around: judged with the append's own reading
        config = self.config
        return (
            latest - timestamp <= config.timestamp_before_max_ms
            and timestamp - earliest <= config.timestamp_after_max_ms
        )
