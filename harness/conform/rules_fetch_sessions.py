"""Rules of Fetch sessions (KIP-227: session ids and epochs, incremental fetches, closing and
forgetting) and of the current leader epoch a consumer's Fetch carries (KIP-320)."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.messages import FetchRequest

from .catalogue import RuleFailed, rule
from .requests import FETCH, batch, fetch_request
from .rules_fetch import (
    EPOCHS,
    FAMILY,
    SESSIONS,
    fetch,
    leader_epoch,
    offsets_of,
    one_partition,
    partitions_of,
    produce,
    same_leader,
    topic_with,
)
from .session import RuleSession, SetupFailed, expect, expect_error

# ---- fetch sessions --------------------------------------------------------------------------------


@rule(
    "fetch.session-sessionless-has-id-zero",
    api=FETCH,
    versions=SESSIONS,
    source="FetchManager.newContext SessionlessFetchContext",
    family=FAMILY,
)
async def sessionless(s: RuleSession, version: int) -> None:
    """A Fetch with session epoch -1 and session id 0 opens no session: the answer's session id is 0."""
    topic, topic_id, leader = await topic_with(s, batch(1))
    body = await fetch(s, leader, version, topic, topic_id, {0: 0})
    expect("session_id", body.session_id, 0)


@rule(
    "fetch.session-epoch-zero-opens-a-session",
    api=FETCH,
    versions=SESSIONS,
    source="FetchManager.newContext FullFetchContext",
    family=FAMILY,
)
async def opens_session(s: RuleSession, version: int) -> None:
    """A full Fetch with session epoch 0 opens a session: NONE, a non-zero session id and every
    partition answered."""
    topic, topic_id, leader = await topic_with(s, partitions=1)
    body = await fetch(s, leader, version, topic, topic_id, {0: 0}, session_epoch=0)
    expect_error("error_code", body.error_code, Errors.NONE)
    if body.session_id == 0:
        raise RuleFailed("session_id", "non-zero", 0)
    expect("partitions", sorted(partitions_of(body)), [0])


@rule(
    "fetch.session-unknown-id-not-found",
    api=FETCH,
    versions=SESSIONS,
    source="FetchManager.newContext FETCH_SESSION_ID_NOT_FOUND",
    family=FAMILY,
)
async def unknown_session(s: RuleSession, version: int) -> None:
    """An incremental Fetch (epoch > 0) naming a session the broker does not have is answered
    FETCH_SESSION_ID_NOT_FOUND at the top level, with no partitions."""
    topic, topic_id, leader = await topic_with(s)
    body = await fetch(s, leader, version, topic, topic_id, {0: 0}, session_id=0x5EED, session_epoch=1)
    expect_error("error_code", body.error_code, Errors.FETCH_SESSION_ID_NOT_FOUND)
    expect("responses", body.responses, [])


@rule(
    "fetch.session-id-zero-with-epoch-not-found",
    api=FETCH,
    versions=SESSIONS,
    source="FetchManager.newContext FETCH_SESSION_ID_NOT_FOUND",
    family=FAMILY,
)
async def zero_session(s: RuleSession, version: int) -> None:
    """An incremental Fetch with session id 0 and epoch 1 names no session: FETCH_SESSION_ID_NOT_FOUND."""
    topic, topic_id, leader = await topic_with(s)
    body = await fetch(s, leader, version, topic, topic_id, {0: 0}, session_id=0, session_epoch=1)
    expect_error("error_code", body.error_code, Errors.FETCH_SESSION_ID_NOT_FOUND)


async def _open_session(s: RuleSession, version: int, count: int = 1):
    """A topic with ``count`` partitions of one leader in a session opened by a full Fetch."""
    topic, topic_id, leader, parts = await same_leader(s, count)
    body = await fetch(s, leader, version, topic, topic_id, dict.fromkeys(parts, 0), session_epoch=0)
    if body.error_code != Errors.NONE or body.session_id == 0:
        raise SetupFailed(f"opening a fetch session: error {body.error_code}, id {body.session_id}")
    return topic, topic_id, leader, body.session_id, parts


@rule(
    "fetch.session-wrong-epoch-is-invalid",
    api=FETCH,
    versions=SESSIONS,
    source="FetchManager.newContext INVALID_FETCH_SESSION_EPOCH",
    family=FAMILY,
)
async def wrong_epoch(s: RuleSession, version: int) -> None:
    """An incremental Fetch whose epoch is not the session's next one is answered
    INVALID_FETCH_SESSION_EPOCH with no partitions."""
    topic, topic_id, leader, session, _ = await _open_session(s, version)
    body = await fetch(s, leader, version, topic, topic_id, {}, session_id=session, session_epoch=5)
    expect_error("error_code", body.error_code, Errors.INVALID_FETCH_SESSION_EPOCH)
    expect("responses", body.responses, [])


@rule(
    "fetch.session-epoch-reused-is-invalid",
    api=FETCH,
    versions=SESSIONS,
    source="FetchManager.newContext INVALID_FETCH_SESSION_EPOCH",
    family=FAMILY,
)
async def epoch_reused(s: RuleSession, version: int) -> None:
    """An incremental Fetch that repeats the epoch just used is answered INVALID_FETCH_SESSION_EPOCH."""
    topic, topic_id, leader, session, _ = await _open_session(s, version)
    first = await fetch(s, leader, version, topic, topic_id, {}, session_id=session, session_epoch=1)
    expect_error("error_code (epoch 1)", first.error_code, Errors.NONE)
    again = await fetch(s, leader, version, topic, topic_id, {}, session_id=session, session_epoch=1)
    expect_error("error_code (epoch 1 again)", again.error_code, Errors.INVALID_FETCH_SESSION_EPOCH)


@rule(
    "fetch.session-incremental-keeps-the-id",
    api=FETCH,
    versions=SESSIONS,
    source="FetchManager.newContext IncrementalFetchContext",
    family=FAMILY,
)
async def incremental_keeps_id(s: RuleSession, version: int) -> None:
    """An incremental Fetch at the session's next epoch is answered NONE under the same session id."""
    topic, topic_id, leader, session, _ = await _open_session(s, version)
    body = await fetch(s, leader, version, topic, topic_id, {}, session_id=session, session_epoch=1)
    expect_error("error_code", body.error_code, Errors.NONE)
    expect("session_id", body.session_id, session)


@rule(
    "fetch.session-incremental-omits-unchanged-partitions",
    api=FETCH,
    versions=SESSIONS,
    source="IncrementalFetchContext.updateAndGenerateResponseData",
    family=FAMILY,
)
async def omits_unchanged(s: RuleSession, version: int) -> None:
    """An incremental Fetch answers only the partitions with news (records, a new high watermark or
    log start offset, an error); the others are left out."""
    topic, topic_id, leader, session, parts = await _open_session(s, version, 3)
    await produce(s, topic, topic_id, batch(2), partition=parts[1])
    first = await fetch(s, leader, version, topic, topic_id, {}, session_id=session, session_epoch=1)
    expect(f"partitions (after an append to {parts[1]})", sorted(partitions_of(first)), [parts[1]])
    expect("offsets", offsets_of(partitions_of(first)[parts[1]]), [0, 1])
    quiet = await fetch(
        s, leader, version, topic, topic_id, {parts[1]: 2}, session_id=session, session_epoch=2
    )
    expect_error("error_code", quiet.error_code, Errors.NONE)
    expect("partitions (nothing new)", sorted(partitions_of(quiet)), [])


@rule(
    "fetch.session-final-epoch-closes-it",
    api=FETCH,
    versions=SESSIONS,
    source="FetchManager.newContext cache.remove",
    family=FAMILY,
)
async def final_epoch_closes(s: RuleSession, version: int) -> None:
    """A Fetch with the session's id and epoch -1 closes the session: it is answered sessionless (id 0)
    and a later incremental Fetch in that session is FETCH_SESSION_ID_NOT_FOUND."""
    topic, topic_id, leader, session, _ = await _open_session(s, version)
    closing = await fetch(s, leader, version, topic, topic_id, {0: 0}, session_id=session, session_epoch=-1)
    expect_error("error_code (closing)", closing.error_code, Errors.NONE)
    expect("session_id (closing)", closing.session_id, 0)
    later = await fetch(s, leader, version, topic, topic_id, {}, session_id=session, session_epoch=1)
    expect_error("error_code (after)", later.error_code, Errors.FETCH_SESSION_ID_NOT_FOUND)


@rule(
    "fetch.session-full-fetch-replaces-the-session",
    api=FETCH,
    versions=SESSIONS,
    source="FetchManager.newContext cache.remove",
    family=FAMILY,
)
async def full_replaces(s: RuleSession, version: int) -> None:
    """A full Fetch (epoch 0) naming an existing session closes it and opens a new one."""
    topic, topic_id, leader, session, _ = await _open_session(s, version)
    again = await fetch(s, leader, version, topic, topic_id, {0: 0}, session_id=session, session_epoch=0)
    expect_error("error_code", again.error_code, Errors.NONE)
    if again.session_id in (0, session):
        raise RuleFailed("session_id", f"a new id (not 0, not {session})", again.session_id)
    old = await fetch(s, leader, version, topic, topic_id, {}, session_id=session, session_epoch=1)
    expect_error("error_code (old session)", old.error_code, Errors.FETCH_SESSION_ID_NOT_FOUND)


@rule(
    "fetch.session-forgotten-partition-leaves-it",
    api=FETCH,
    versions=SESSIONS,
    source="FetchSession.update toForget",
    family=FAMILY,
)
async def forgotten(s: RuleSession, version: int) -> None:
    """A partition named in forgotten_topics_data leaves the session: later news on it is not answered."""
    topic, topic_id, leader, session, (kept, dropped) = await _open_session(s, version, 2)
    request = fetch_request(topic, topic_id, {}, session_id=session, session_epoch=1)
    request.forgotten_topics_data = [
        FetchRequest.ForgottenTopic(topic=topic, topic_id=topic_id, partitions=[dropped])
    ]
    forget = await s.call(leader, FETCH, version, request)
    expect_error("error_code (forgetting)", forget.error_code, Errors.NONE)
    await produce(s, topic, topic_id, batch(1), partition=dropped)
    await produce(s, topic, topic_id, batch(1), partition=kept)
    body = await fetch(s, leader, version, topic, topic_id, {}, session_id=session, session_epoch=2)
    expect("partitions", sorted(partitions_of(body)), [kept])


# ---- leader epochs ---------------------------------------------------------------------------------


@rule(
    "fetch.current-leader-epoch-newer-is-unknown",
    api=FETCH,
    versions=EPOCHS,
    source="Partition.checkCurrentLeaderEpoch UNKNOWN_LEADER_EPOCH",
    family=FAMILY,
)
async def epoch_newer(s: RuleSession, version: int) -> None:
    """A current_leader_epoch newer than the leader's is answered UNKNOWN_LEADER_EPOCH."""
    topic, topic_id, leader = await topic_with(s, batch(1))
    epoch = await leader_epoch(s, topic)
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 0}, leader_epoch=epoch + 1))
    expect_error("error_code", part.error_code, Errors.UNKNOWN_LEADER_EPOCH)


@rule(
    "fetch.current-leader-epoch-matching-is-served",
    api=FETCH,
    versions=EPOCHS,
    source="Partition.checkCurrentLeaderEpoch",
    family=FAMILY,
)
async def epoch_same(s: RuleSession, version: int) -> None:
    """A current_leader_epoch equal to the leader's is served (NONE, the records)."""
    topic, topic_id, leader = await topic_with(s, batch(1))
    epoch = await leader_epoch(s, topic)
    part = one_partition(await fetch(s, leader, version, topic, topic_id, {0: 0}, leader_epoch=epoch))
    expect_error("error_code", part.error_code, Errors.NONE)
    expect("offsets", offsets_of(part), [0])
