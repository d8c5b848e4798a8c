"""Reading a group coordinator's state back from ``__consumer_offsets`` (Kafka's replay on load): each
record changes the state the way its live write did; transactional offset commits wait for their
transaction's marker. Unreadable records are skipped with a log line, never fatal."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from ..internal_topics import CorruptInternalTopic, StoredRecord
from .classic_group import ClassicGroup
from .classic_log_records import (
    GROUP_METADATA_KEY,
    RecordFormatError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    key_version,
)
from .events import CommittedOffset, GroupsState
from .kip848_group import apply_record
from .kip848_log_records import KEY_VERSIONS, decode
from .offset_rules import complete_pending

__all__ = ["load_partition", "replay_kip848"]

log = logging.getLogger(__name__)


def load_partition(state: GroupsState, partition: int, stored_records: Iterable[StoredRecord]) -> None:
    try:
        for stored in stored_records:
            if stored.control is not None:
                complete_pending(state, partition, stored.producer_id, stored.control == 1)
                continue
            try:
                _replay(state, partition, stored)
            except RecordFormatError as exc:
                log.error(
                    "skipping unreadable record at %s of __consumer_offsets-%d: %s",
                    stored.offset,
                    partition,
                    exc,
                )
    except CorruptInternalTopic as exc:
        log.error("%s; the groups after that point are not loaded", exc)


def replay_kip848(groups: dict[str, object], version: int, key: bytes, value: bytes | None) -> None:
    """Apply one KIP-848 record (key versions 3 and up; types this coordinator does not keep are
    skipped). Raises RecordFormatError, and nothing else, for bytes that do not read."""
    if version not in KEY_VERSIONS:
        return
    try:
        record = decode(key, value)
    except RecordFormatError:
        raise
    except Exception as exc:  # nothing read from disk may stop the coordinator from loading
        raise RecordFormatError(f"unreadable consumer group record: {exc}") from exc
    if record is not None:
        apply_record(groups, record)


def _replay(state: GroupsState, partition: int, stored: StoredRecord) -> None:
    version = key_version(stored.key)
    if version >= 3:
        replay_kip848(state.groups, version, stored.key, stored.value)
        return
    _, fields = decode_key(stored.key)
    if version == GROUP_METADATA_KEY:
        (group_id,) = fields
        if stored.value is None:
            state.groups.pop(group_id, None)
        else:
            state.groups[group_id] = ClassicGroup.from_record(
                group_id, decode_group_metadata_value(stored.value)
            )
        return
    group_id, topic, index = fields
    if stored.value is None:
        state.offsets[group_id].pop((topic, index), None)
        return
    committed = CommittedOffset(decode_offset_commit_value(stored.value), stored.offset)
    if stored.is_transactional:
        state.pending_txn.setdefault((partition, stored.producer_id), []).append(
            (group_id, (topic, index), committed)
        )
    else:
        state.offsets[group_id][(topic, index)] = committed
    state.groups.setdefault(group_id, ClassicGroup(group_id))
