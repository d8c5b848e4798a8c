"""What reading a batch's records ahead found (``_scan``), as the log validator (``_log``, ``_ahead``)
and the framing that carries it to them (``_framing``) see it."""

from __future__ import annotations

from dataclasses import dataclass

from kconform.codecs import DecodeError
from kconform.codecs.records import StreamedV2Batch

from ._suspects import RecordShape, RuleWindow

__all__ = ["RecordsScan"]


@dataclass(frozen=True, slots=True)
class RecordsScan:
    """What reading a batch's records found. ``failure`` is the DecodeError the whole-batch reader
    raises for it (the other fields then count only what came before). Timestamps are as Kafka's
    long arithmetic leaves them; ``lowest_timestamp``/``highest_timestamp`` leave NO_TIMESTAMP out."""

    count: int
    max_timestamp: int
    lowest_timestamp: int | None
    highest_timestamp: int | None
    has_no_timestamp: bool
    has_null_key: bool
    offsets_in_order: bool
    failure: DecodeError | None = None
    # Read ahead with the topic's rules (``scan_compressed_records`` given its config and clock): the
    # window they hold for, the records that could break one there, and the batch rebuilt for the
    # topic's codec (unsealed; None when the batch is kept as it came).
    window: RuleWindow | None = None
    suspects: tuple[RecordShape, ...] = ()
    rebuilt: StreamedV2Batch | None = None
