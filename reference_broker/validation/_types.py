"""What log validation takes and gives: the topic settings it reads, the append it returns, and the
rejection it raises (with where Kafka reports it)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kconform.codecs.compression import Compression
from kconform.codecs.errors import error_for
from kconform.codecs.records import BatchHeader, TimestampType

__all__ = [
    "AppendedBatch",
    "LogValidationConfig",
    "RecordsRejected",
    "RejectionScope",
    "ValidatedAppend",
]

LONG_MAX = 2**63 - 1
_INT32_MAX = 2**31 - 1

# Topic compression.type values (Kafka's BrokerCompressionType) and the codec each one forces.
_TOPIC_CODECS: dict[str, Compression | None] = {
    "producer": None,
    "uncompressed": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}
_TIMESTAMP_TYPES = {"CreateTime": TimestampType.CREATE_TIME, "LogAppendTime": TimestampType.LOG_APPEND_TIME}
# Level ranges Kafka's topic config accepts (GzipCompression, Lz4Compression, ZstdCompression).
_LEVELS = {
    "compression_gzip_level": (1, 9, (-1,)),
    "compression_lz4_level": (1, 17, ()),
    "compression_zstd_level": (-131072, 22, ()),
}


@dataclass(frozen=True, slots=True)
class LogValidationConfig:
    """The topic settings Kafka's log validation reads, with Kafka's defaults.

    ``compression_type`` is ``compression.type`` (``producer`` keeps the producer's codec); the levels
    are ``compression.gzip.level`` and friends (None: the codec's default, which is Kafka's);
    ``compacted`` is whether ``cleanup.policy`` contains ``compact``; ``timestamp_type`` is
    ``message.timestamp.type``; the two bounds are ``message.timestamp.before.max.ms`` and
    ``message.timestamp.after.max.ms`` as Kafka resolves them (the deprecated
    ``message.timestamp.difference.max.ms`` applies where a bound is left at Long.MAX_VALUE);
    ``max_message_bytes`` is ``max.message.bytes`` and ``segment_bytes`` is ``segment.bytes``.
    """

    compression_type: str = "producer"
    compression_gzip_level: int | None = None
    compression_lz4_level: int | None = None
    compression_zstd_level: int | None = None
    compacted: bool = False
    timestamp_type: str = "CreateTime"
    timestamp_before_max_ms: int = LONG_MAX
    timestamp_after_max_ms: int = 3_600_000  # KIP-1030: one hour from Kafka 4.0 (was Long.MAX_VALUE)
    max_message_bytes: int = 1048588
    segment_bytes: int = 1073741824

    @classmethod
    def from_topic_settings(cls, settings) -> LogValidationConfig:
        """The config a topic's effective settings (name -> string) give."""

        def level(name: str) -> int | None:
            value = int(settings.get(name, "-1"))
            return None if value < 0 else value

        return cls(
            compression_type=settings.get("compression.type", "producer"),
            compression_gzip_level=level("compression.gzip.level"),
            compression_lz4_level=level("compression.lz4.level"),
            compression_zstd_level=level("compression.zstd.level"),
            compacted="compact" in settings.get("cleanup.policy", "delete"),
            timestamp_type=settings.get("message.timestamp.type", "CreateTime"),
            timestamp_before_max_ms=int(settings.get("message.timestamp.before.max.ms", str(LONG_MAX))),
            timestamp_after_max_ms=int(settings.get("message.timestamp.after.max.ms", "3600000")),
            max_message_bytes=int(settings.get("max.message.bytes", "1048588")),
            segment_bytes=int(settings.get("segment.bytes", "1073741824")),
        )

    def __post_init__(self) -> None:
        name = self.compression_type.lower()
        if name not in _TOPIC_CODECS:
            raise ValueError(
                f"compression_type must be one of {sorted(_TOPIC_CODECS)}, got {self.compression_type!r}"
            )
        object.__setattr__(self, "compression_type", name)
        if self.timestamp_type not in _TIMESTAMP_TYPES:
            raise ValueError(
                f"timestamp_type must be CreateTime or LogAppendTime, got {self.timestamp_type!r}"
            )
        for attr, (lo, hi, extra) in _LEVELS.items():
            level = getattr(self, attr)
            if level is not None and not (lo <= level <= hi or level in extra):
                raise ValueError(f"{attr} must be within [{lo}, {hi}], got {level}")
        for attr in ("timestamp_before_max_ms", "timestamp_after_max_ms"):
            if not 0 <= getattr(self, attr) <= LONG_MAX:
                raise ValueError(f"{attr} must be within [0, {LONG_MAX}]")
        if not 0 <= self.max_message_bytes <= 2**31 - 1:
            raise ValueError("max_message_bytes must be a non-negative int32")
        if not 14 <= self.segment_bytes <= 2**31 - 1:
            raise ValueError("segment_bytes must be an int32 of at least 14")

    @property
    def topic_compression(self) -> Compression | None:
        """The codec the topic forces, or None when it keeps the producer's."""
        return _TOPIC_CODECS[self.compression_type]

    @property
    def log_timestamp_type(self) -> TimestampType:
        return _TIMESTAMP_TYPES[self.timestamp_type]

    def compression_level(self, codec: Compression) -> int | None:
        """The level the topic asks for when it recompresses to ``codec`` (None: the default)."""
        if self.topic_compression is None:
            return None  # Kafka builds the producer's codec with its default level
        return {
            Compression.GZIP: self.compression_gzip_level,
            Compression.LZ4: self.compression_lz4_level,
            Compression.ZSTD: self.compression_zstd_level,
        }.get(codec)


@dataclass(frozen=True, slots=True)
class AppendedBatch:
    """One batch as it will be appended: its header as written, which the log append takes as it is
    (the batch is not parsed again), and what the producer-state (idempotence) check reads of it.

    ``last_sequence`` is Kafka's ``DefaultRecordBatch.lastSequence``: the base sequence plus the last
    offset delta, wrapping past the int32 maximum to 0, or -1 without a base sequence.
    """

    header: BatchHeader

    @property
    def first_offset(self) -> int:
        return self.header.base_offset

    @property
    def last_offset(self) -> int:
        return self.header.last_offset

    @property
    def record_count(self) -> int:
        return self.header.record_count

    @property
    def producer_id(self) -> int:
        return self.header.producer_id

    @property
    def producer_epoch(self) -> int:
        return self.header.producer_epoch

    @property
    def base_sequence(self) -> int:
        return self.header.base_sequence

    @property
    def last_sequence(self) -> int:
        base, delta = self.header.base_sequence, self.header.last_offset_delta
        if base < 0:
            return -1
        if base > _INT32_MAX - delta:  # incrementSequence wraps past the int32 maximum to 0
            return delta - (_INT32_MAX - base) - 1
        return base + delta

    @property
    def is_transactional(self) -> bool:
        return self.header.is_transactional

    @property
    def is_control(self) -> bool:
        return self.header.is_control

    @property
    def max_timestamp(self) -> int:
        return self.header.max_timestamp

    @property
    def has_producer_id(self) -> bool:
        return self.header.producer_id >= 0


@dataclass(slots=True)
class ValidatedAppend:
    """Records ready to append, and what Kafka's ``LogAppendInfo`` says about them.

    ``records`` holds the batches with offsets, partition leader epoch and max timestamp assigned;
    ``in_place`` says the producer's bytes were kept (only header fields rewritten) rather than the
    batch rebuilt. ``offset_of_max_timestamp`` is Kafka's shallow offset of the max timestamp: the last
    offset of the batch holding it, or -1 when no record carries a timestamp. An empty ``records``
    (only from Produce v0-2 with no whole batch) appends nothing; Kafka then answers with base
    offset -1 and no error.
    """

    records: bytearray
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time_ms: int
    record_count: int
    batches: tuple[AppendedBatch, ...]
    in_place: bool


class RejectionScope(StrEnum):
    """How far a rejection reaches in Kafka's answer to the Produce request."""

    PARTITION = "partition"  # this partition gets the error; the others are handled on their own
    REQUEST = "request"  # Kafka fails the whole request: every partition gets the error and message
    NO_RESPONSE = "no_response"  # Kafka's handler throws while failing and never answers the request


class RecordsRejected(Exception):
    """Records Kafka refuses to append, with the answer Kafka gives.

    ``error_code`` is the Kafka error; ``message`` says why (Kafka's exception text, for logs);
    ``record_errors`` lists ``(index, message)`` pairs, ``index`` counting records within the batch
    (the response's ``batch_index``). ``error_message`` is what the Produce response carries in its
    ``error_message`` field (Kafka fills it only for record-level errors and request-wide failures).
    ``reports_log_start_offset`` says whether Kafka's partition response carries the partition's log
    start offset (else -1). ``scope`` says whether the error stays with this partition.
    """

    def __init__(
        self,
        error_code: int,
        message: str,
        record_errors: list[tuple[int, str]] | tuple = (),
        *,
        error_message: str | None = None,
        reports_log_start_offset: bool = False,
        scope: RejectionScope = RejectionScope.PARTITION,
    ) -> None:
        super().__init__(f"{error_for(error_code).name}: {message}")
        self.error_code = error_code
        self.message = message
        self.record_errors = list(record_errors)
        self.error_message = error_message
        self.reports_log_start_offset = reports_log_start_offset
        self.scope = RejectionScope(scope)

    def __repr__(self) -> str:
        return (
            f"RecordsRejected({self.error_code!r}, {self.message!r}, {self.record_errors!r}, "
            f"error_message={self.error_message!r}, "
            f"reports_log_start_offset={self.reports_log_start_offset!r}, scope={self.scope.value!r})"
        )

    def __reduce__(self):
        return (
            _rebuild_rejection,
            (
                self.error_code,
                self.message,
                self.record_errors,
                self.error_message,
                self.reports_log_start_offset,
                self.scope.value,
            ),
        )


def _rebuild_rejection(error_code, message, record_errors, error_message, reports_log_start_offset, scope):
    return RecordsRejected(
        error_code,
        message,
        record_errors,
        error_message=error_message,
        reports_log_start_offset=reports_log_start_offset,
        scope=scope,
    )
