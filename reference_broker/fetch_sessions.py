"""Incremental fetch sessions (KIP-227), after Kafka's FetchSession.scala.

A full fetch (epoch 0) closes any session it names and may open a new one; epoch -1 asks for no
session at all; an incremental fetch (epoch > 0) must name a live session at its next epoch, sends only
changed partitions, and gets back only the partitions whose data, high watermark, log start offset or
error changed, or that name a preferred read replica. Times are passed in; nothing here reads a clock
or does I/O."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from kconform.codecs.errors import Errors

__all__ = [
    "FetchSessionCache",
    "FetchContext",
    "CachedPartition",
    "INITIAL_EPOCH",
    "FINAL_EPOCH",
    "next_epoch",
]

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EVICTION_MS = 120_000


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == 0x7FFFFFFF else epoch + 1


@dataclass(slots=True)
class CachedPartition:
    """What the session remembers of one partition: the last request and the last response."""

    fetch_offset: int
    max_bytes: int
    log_start_offset: int  # the fetcher's
    current_leader_epoch: int
    last_fetched_epoch: int = -1  # a follower's (v12+): where its log may diverge from the leader's
    high_watermark: int = -1
    local_log_start_offset: int = -1

    def must_respond(
        self,
        *,
        has_records: bool,
        high_watermark: int,
        log_start_offset: int,
        error: int,
        preferred_read_replica: int = -1,
        update: bool = True,
    ) -> bool:
        """Whether the partition goes into an incremental response; updates what is remembered unless
        ``update`` is False (``CachedPartition.maybeUpdateResponseData``: a preferred read replica is
        always sent; sizing a response that may yet be throttled must not touch the session)."""
        respond = has_records or preferred_read_replica >= 0 or bool(error)
        respond = respond or self.high_watermark != high_watermark
        respond = respond or self.local_log_start_offset != log_start_offset
        if update:
            self.high_watermark = high_watermark
            self.local_log_start_offset = log_start_offset
            if error:
                self.high_watermark = -1  # so the partition is sent again once the error clears
        return respond


@dataclass(slots=True)
class FetchSession:
    id: int
    privileged: bool
    partitions: dict  # key -> CachedPartition, in insertion order
    creation_ms: int
    last_used_ms: int
    epoch: int


@dataclass(slots=True)
class FetchContext:
    """How to treat one fetch request: which partitions to read and which session answers."""

    kind: str  # "sessionless", "full", "incremental", "error"
    partitions: dict  # key -> CachedPartition (the request's view of each partition to read)
    error: int = Errors.NONE
    session: FetchSession | None = None
    privileged: bool = False
    forgotten: list = field(default_factory=list)

    def throttled_session_id(self) -> int:
        """The session id of the empty answer a throttled fetch gets (``getThrottledResponse``): an
        incremental session's own, left as it is for the next fetch; else none, and a full fetch
        opens no session."""
        return self.session.id if self.kind == "incremental" else INVALID_SESSION_ID


class FetchSessionCache:
    def __init__(self, max_entries: int, *, rng: random.Random | None = None) -> None:
        self.max_entries = max_entries
        self.sessions: dict[int, FetchSession] = {}
        self._rng = rng or random.Random()

    def new_context(
        self, session_id: int, epoch: int, requested: dict, forgotten: list, *, is_follower: bool, now_ms: int
    ) -> FetchContext:
        """``requested`` maps partition keys to CachedPartition built from the request."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.sessions.pop(session_id, None)
            kind = "sessionless" if epoch == FINAL_EPOCH else "full"
            return FetchContext(kind, dict(requested), privileged=is_follower)
        session = self.sessions.get(session_id)
        if session is None:
            return FetchContext("error", {}, Errors.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return FetchContext("error", {}, Errors.INVALID_FETCH_SESSION_EPOCH)
        for key, cached in requested.items():
            known = session.partitions.get(key)
            if known is None:
                session.partitions[key] = cached
            else:
                known.fetch_offset = cached.fetch_offset
                known.max_bytes = cached.max_bytes
                known.log_start_offset = cached.log_start_offset
                known.current_leader_epoch = cached.current_leader_epoch
        for key in forgotten:
            session.partitions.pop(key, None)
        if not session.partitions:
            self.sessions.pop(session.id, None)
            return FetchContext("sessionless", dict(requested))
        session.last_used_ms = now_ms
        session.epoch = next_epoch(session.epoch)
        return FetchContext("incremental", dict(session.partitions), session=session)

    def maybe_create(self, privileged: bool, partitions: dict, now_ms: int) -> int:
        """A new session for a full fetch's partitions, or INVALID_SESSION_ID when there is no room."""
        if len(self.sessions) >= self.max_entries and not self._try_evict(
            privileged, len(partitions), now_ms
        ):
            return INVALID_SESSION_ID
        session_id = 0
        while session_id == INVALID_SESSION_ID or session_id in self.sessions:
            session_id = self._rng.randint(1, 0x7FFFFFFE)
        self.sessions[session_id] = FetchSession(
            session_id, privileged, dict(partitions), now_ms, now_ms, next_epoch(INITIAL_EPOCH)
        )
        return session_id

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Kafka's rule: evict a stale session; else the least valuable evictable one, if the new
        session is worth more (privileged beats unprivileged, then more partitions)."""
        if not self.sessions:
            return False
        stalest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stalest.last_used_ms > EVICTION_MS:
            del self.sessions[stalest.id]
            return True
        candidates = [
            s
            for s in self.sessions.values()
            if now_ms - s.creation_ms > EVICTION_MS or (privileged and not s.privileged)
        ]
        if not candidates:
            return False
        weakest = min(candidates, key=lambda s: (s.privileged, len(s.partitions), s.id))
        if (privileged, size) < (weakest.privileged, len(weakest.partitions)):
            return False
        del self.sessions[weakest.id]
        return True
