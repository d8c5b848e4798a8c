"""Kafka's small text files, written atomically (temporary file, fsync, rename).

* Checkpoint files (``CheckpointFile``): a version line, a count line, then one entry per line.
  ``leader-epoch-checkpoint`` (version 0, ``epoch start_offset``) sits in the partition directory as in
  Kafka. The offset checkpoints (version 0, ``topic partition offset``) that Kafka keeps once per data
  directory for all partitions (``log-start-offset-checkpoint``, ``recovery-point-offset-checkpoint``,
  ``replication-offset-checkpoint``) are kept here once per partition directory, with the same name and
  format and a single entry, so a partition directory is self-contained.
* ``partition.metadata``: ``version: 0`` and ``topic_id: <base64url topic id>``, as Kafka writes it.
* ``.kafka_cleanshutdown``: Kafka writes it at the root of a data directory after all logs are closed;
  here each partition directory gets its own, written by ``PartitionLog.close`` and removed when the
  log is opened, holding Kafka's JSON ``{"version":0,"brokerEpoch":-1}``.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar
from uuid import UUID

from ._errors import CorruptCheckpoint
from ._files import write_atomically

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "HIGH_WATERMARK_CHECKPOINT",
    "LEADER_EPOCH_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "PARTITION_METADATA_FILE",
    "RECOVERY_POINT_CHECKPOINT",
    "read_checkpoint",
    "read_leader_epochs",
    "read_offset_checkpoint",
    "read_topic_id",
    "write_checkpoint",
    "write_clean_shutdown",
    "write_leader_epochs",
    "write_offset_checkpoint",
    "write_topic_id",
]

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"

_VERSION = 0
T = TypeVar("T")


def write_checkpoint(path: Path, version: int, lines: Sequence[str]) -> None:
    text = f"{version}\n{len(lines)}\n" + "".join(f"{line}\n" for line in lines)
    write_atomically(path, text.encode("utf-8"))


def read_checkpoint(path: Path, version: int, parse: Callable[[str], T | None]) -> list[T] | None:
    """The entries of a checkpoint file (None if it does not exist), with Kafka's checks: the version
    must match, every line must parse and the count must match the entries."""
    try:
        lines = path.read_text("utf-8").splitlines()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise CorruptCheckpoint(f"checkpoint file {path} is not text") from None
    if not lines:
        return []
    if _to_int(lines[0], path) != version:
        raise CorruptCheckpoint(f"unrecognised version {lines[0]!r} in checkpoint file {path}")
    if len(lines) < 2:
        return []
    expected = _to_int(lines[1], path)
    entries = []
    for line in lines[2:]:
        entry = parse(line)
        if entry is None:
            raise CorruptCheckpoint(f"malformed line {line!r} in checkpoint file {path}")
        entries.append(entry)
    if len(entries) != expected:
        raise CorruptCheckpoint(
            f"expected {expected} entries in checkpoint file {path}, found {len(entries)}"
        )
    return entries


def _to_int(text: str, path: Path) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise CorruptCheckpoint(f"malformed line {text!r} in checkpoint file {path}") from None


def _ints(line: str, count: int) -> list[int] | None:
    parts = line.split()
    if len(parts) != count:
        return None
    try:
        return [int(part) for part in parts]
    except ValueError:
        return None


# --- leader-epoch-checkpoint -----------------------------------------------------------------------


def write_leader_epochs(path: Path, entries: Sequence[tuple[int, int]]) -> None:
    write_checkpoint(path, _VERSION, [f"{epoch} {start_offset}" for epoch, start_offset in entries])


def read_leader_epochs(path: Path) -> list[tuple[int, int]]:
    def parse(line: str) -> tuple[int, int] | None:
        values = _ints(line, 2)
        return None if values is None else (values[0], values[1])

    return read_checkpoint(path, _VERSION, parse) or []


# --- per-partition offset checkpoints --------------------------------------------------------------


def write_offset_checkpoint(path: Path, topic: str, partition: int, offset: int) -> None:
    write_checkpoint(path, _VERSION, [f"{topic} {partition} {offset}"])


def read_offset_checkpoint(path: Path, topic: str, partition: int) -> int | None:
    """This partition's offset in an offset checkpoint file, or None if the file or entry is absent."""

    def parse(line: str) -> tuple[str, int, int] | None:
        parts = line.split()
        if len(parts) != 3:
            return None
        try:
            return parts[0], int(parts[1]), int(parts[2])
        except ValueError:
            return None

    for entry_topic, entry_partition, offset in read_checkpoint(path, _VERSION, parse) or []:
        if entry_topic == topic and entry_partition == partition:
            return offset
    return None


# --- partition.metadata ----------------------------------------------------------------------------

_METADATA_LINE = re.compile(r":\s+")


def _uuid_to_kafka(topic_id: UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def _uuid_from_kafka(text: str, path: Path) -> UUID:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raw = b""
    if len(raw) != 16:
        raise CorruptCheckpoint(f"malformed topic id {text!r} in {path}")
    return UUID(bytes=raw)


def write_topic_id(path: Path, topic_id: UUID) -> None:
    write_atomically(path, f"version: {_VERSION}\ntopic_id: {_uuid_to_kafka(topic_id)}".encode())


def read_topic_id(path: Path) -> UUID | None:
    try:
        lines = path.read_text("utf-8").splitlines()
    except FileNotFoundError:
        return None
    values = []
    for line, key in zip(lines + ["", ""], ("version", "topic_id"), strict=False):
        parts = _METADATA_LINE.split(line, maxsplit=1)
        if len(parts) != 2 or parts[0] != key:
            raise CorruptCheckpoint(f"malformed line {line!r} in partition metadata file {path}")
        values.append(parts[1])
    if _to_int(values[0], path) < _VERSION:
        raise CorruptCheckpoint(f"unrecognised version {values[0]!r} of partition metadata file {path}")
    topic_id = _uuid_from_kafka(values[1].strip(), path)
    if topic_id.int == 0:
        raise CorruptCheckpoint(f"invalid topic id in partition metadata file {path}")
    return topic_id


# --- clean shutdown marker -------------------------------------------------------------------------


def write_clean_shutdown(path: Path) -> None:
    write_atomically(path, b'{"version":0,"brokerEpoch":-1}')
