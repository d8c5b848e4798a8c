"""How a throttled client is answered, as Kafka does it: a consumer over its byte rate gets an empty
Fetch answer carrying the throttle time (``KafkaApis.handleFetchRequest``, ``getThrottledResponse``),
its incremental session kept and the unsent bytes taken back (``unrecordQuotaSensor``); a follower's
fetch counts against no client quota; and a response whose version has no throttle_time_ms still goes
out at once, the connection muted afterwards (KIP-219: ``ClientQuotaManager.throttle``, ``KafkaChannel``'s
mute states; ``AbstractResponse.shouldClientThrottle`` is for the client only)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace

from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AlterClientQuotasRequest,
    CreateTopicsRequest,
    FetchRequest,
    MetadataRequest,
    ProduceRequest,
)
from kconform.codecs.metadata_records import ClientQuotaRecord
from kconform.codecs.records import Record, encode_batch
from kconform.reference_broker.cluster_metadata.client_quotas import ClientQuotas
from kconform.reference_broker.fetch_sessions import CachedPartition, FetchSessionCache
from kconform.reference_broker.node import BrokerNode
from kconform.reference_broker.quotas import (
    FETCH,
    REQUEST,
    ClientQuotaManagers,
    fetch_throttle_ms,
    request_throttle_ms,
)
from kconform.reference_broker.security.principals import ANONYMOUS

from ...support.rawclient import RawClient

TOPIC = "throttled"


def quotas_of(client_id: str, **values) -> ClientQuotas:
    quotas = ClientQuotas()
    entity = [ClientQuotaRecord.EntityData(entity_type="client-id", entity_name=client_id)]
    for key, value in values.items():
        quotas.replay(ClientQuotaRecord(entity=entity, key=key, value=value))
    return quotas


def ctx_of(api_key: int, version: int, client_id: str = "c"):
    return SimpleNamespace(api_key=api_key, api_version=version, client_id=client_id, principal=ANONYMOUS)


# ---- the pure parts -----------------------------------------------------------------------------


def test_a_throttled_fetch_takes_its_bytes_back():
    managers = ClientQuotaManagers(samples=2, window_seconds=1)
    quotas = quotas_of("c", consumer_byte_rate=1000.0)
    ctx = ctx_of(1, 12)
    first = fetch_throttle_ms(managers, quotas, ctx, response_bytes=800, handler_nanos=0, now_ms=0)
    second = fetch_throttle_ms(managers, quotas, ctx, response_bytes=800, handler_nanos=0, now_ms=0)
    third = fetch_throttle_ms(managers, quotas, ctx, response_bytes=800, handler_nanos=0, now_ms=0)
    # 800 B then 1600 B over 1 s against 1000 B/s: (1600 - 1000) / 1000 * 1000 ms; the third is judged
    # on the same 1600 B because the second's bytes were taken back
    assert (first, second, third) == (0, 600, 600)


def test_a_fetch_throttled_by_request_time_also_takes_its_bytes_back():
    managers = ClientQuotaManagers(samples=2, window_seconds=1)
    quotas = quotas_of("c", consumer_byte_rate=1000.0, request_percentage=1.0)
    ctx = ctx_of(1, 12)
    # 20 ms of handling is 2% of a second: (2 - 1) / 1 * 1000 ms, the request quota's one-window cap
    assert (
        fetch_throttle_ms(managers, quotas, ctx, response_bytes=900, handler_nanos=20_000_000, now_ms=0)
        == 1000
    )
    assert fetch_throttle_ms(managers, quotas, ctx, response_bytes=900, handler_nanos=0, now_ms=0) == 1000
    assert managers.record(quotas, FETCH, "ANONYMOUS", "c", 0, now_ms=0) == 0, "no bytes were kept"


def test_a_followers_fetch_counts_against_no_client_quota():
    managers = ClientQuotaManagers(samples=2, window_seconds=1)
    quotas = quotas_of("c", consumer_byte_rate=1.0, request_percentage=0.001)
    follower = SimpleNamespace(replica_id=1)
    args = dict(request_bytes=10, response_bytes=10**6, handler_nanos=10**9, now_ms=0)
    assert request_throttle_ms(managers, quotas, ctx_of(1, 12), follower, **args) == 0
    consumer = SimpleNamespace(replica_id=-1)
    assert request_throttle_ms(managers, quotas, ctx_of(1, 12), consumer, **args) > 0
    assert managers.record(quotas, REQUEST, "ANONYMOUS", "c", 0, now_ms=0) > 0  # the consumer's time only


def test_sizing_an_incremental_answer_leaves_the_session_as_it_was():
    cache = FetchSessionCache(10)
    part = CachedPartition(fetch_offset=0, max_bytes=100, log_start_offset=0, current_leader_epoch=0)
    session_id = cache.maybe_create(False, {("t", 0): part}, now_ms=0)
    context = cache.new_context(session_id, 1, {}, [], is_follower=False, now_ms=0)
    cached = context.session.partitions[("t", 0)]
    kept = (cached.high_watermark, cached.local_log_start_offset)
    args = dict(has_records=False, high_watermark=5, log_start_offset=0, error=0)
    assert cached.must_respond(**args, update=False)
    assert (cached.high_watermark, cached.local_log_start_offset) == kept
    assert cached.must_respond(**args) and not cached.must_respond(**args)
    assert context.throttled_session_id() == session_id
    full = cache.new_context(0, 0, {("t", 0): part}, [], is_follower=False, now_ms=0)
    assert full.throttled_session_id() == 0


# ---- live ----------------------------------------------------------------------------------------


def run_node(data_dir: Path, scenario):
    async def main():
        settings = {"node.id": "1", "log.dirs": str(data_dir), "quota.window.num": "2"}
        node = BrokerNode.from_config_file(None, settings)
        host, port = await node.start("127.0.0.1", 0)
        try:
            async with await RawClient.connect(host, port, client_id="admin") as admin:
                return await scenario(admin, node, host, port)
        finally:
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))


async def set_quota(admin, client_id: str, **values) -> None:
    entity = [AlterClientQuotasRequest.EntityData(entity_type="client-id", entity_name=client_id)]
    ops = [AlterClientQuotasRequest.OpData(key=k, value=v, remove=False) for k, v in values.items()]
    entry = AlterClientQuotasRequest.EntryData(entity=entity, ops=ops)
    altered = await admin.call(49, 1, AlterClientQuotasRequest(entries=[entry]))
    assert altered.entries[0].error_code == Errors.NONE


async def topic_with_data(admin, value_size: int) -> None:
    topic = CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1)
    created = await admin.call(19, 7, CreateTopicsRequest(topics=[topic], timeout_ms=5000))
    assert created.topics[0].error_code == Errors.NONE
    batch = encode_batch([Record(offset=0, timestamp=1_700_000_000_000, key=None, value=b"x" * value_size)])
    data = ProduceRequest.TopicProduceData(
        name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)]
    )
    produced = await admin.call(0, 9, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[data]))
    assert produced.responses[0].partition_responses[0].error_code == Errors.NONE


def fetch(session_id: int = 0, epoch: int = -1, with_partition: bool = True) -> FetchRequest:
    part = FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    topics = [FetchRequest.FetchTopic(topic=TOPIC, partitions=[part])] if with_partition else []
    return FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_id=session_id,
        session_epoch=epoch, topics=topics, forgotten_topics_data=[],
    )  # fmt: skip


def test_a_consumer_over_its_byte_rate_gets_an_empty_answer_its_session_kept(tmp_path):
    """1000 B/s over 2 one-second samples; each answer with data is about 700 bytes. The first fetch
    (opening a session) is answered; the incremental one after it would make ~1400 B in a second: it
    gets no partitions, the throttle time, the same session id, and a full fetch throttled in turn
    opens no session. Being muted, each client waits its throttle out before its next answer."""

    async def scenario(admin, node, host, port):
        await topic_with_data(admin, 600)
        await set_quota(admin, "consumer", consumer_byte_rate=1000.0)
        async with await RawClient.connect(host, port, client_id="consumer") as consumer:
            opened = await consumer.call(1, 12, fetch(0, 0))
            asked = time.monotonic()
            throttled = await consumer.call(1, 12, fetch(opened.session_id, 1, with_partition=False))
            sessions = len(node.fetch_sessions.sessions)
            async with await RawClient.connect(host, port, client_id="consumer") as other:
                full = await other.call(1, 12, fetch(0, 0))
                sessions_after = len(node.fetch_sessions.sessions)
            resumed = await consumer.call(1, 12, fetch(opened.session_id, 2, with_partition=False))
            return opened, throttled, full, sessions, sessions_after, time.monotonic() - asked, resumed

    opened, throttled, full, sessions, sessions_after, waited, resumed = run_node(tmp_path, scenario)
    assert opened.throttle_time_ms == 0 and opened.session_id != 0
    [records] = [p.records for t in opened.responses for p in t.partitions]
    assert len(records) > 600
    assert throttled.error_code == Errors.NONE and throttled.responses == []
    assert 0 < throttled.throttle_time_ms <= 1000
    assert throttled.session_id == opened.session_id, "an incremental session keeps its id"
    assert full.throttle_time_ms > 0 and full.responses == [] and full.session_id == 0
    assert sessions == sessions_after == 1, "a throttled full fetch opens no session"
    # the session's epoch moved on with the throttled fetch: the next epoch is accepted
    assert resumed.error_code == Errors.NONE and resumed.session_id == opened.session_id
    assert waited >= throttled.throttle_time_ms / 1000, "the muted connection was read early"


def test_without_a_throttle_field_the_answer_still_comes_at_once_and_the_connection_is_muted(tmp_path):
    """A request quota too small for any request: every request of the client is throttled one window
    (1 s, the request quota's cap). Metadata v1 has no throttle_time_ms; its answer is not held back,
    but the next request on the connection is not read until the throttle, which began before the first
    answer was sent, has passed; Metadata v4 carries the time."""

    async def scenario(admin, node, host, port):
        async with await RawClient.connect(host, port, client_id="muted") as client:
            await set_quota(admin, "muted", request_percentage=0.0001)
            sent = time.monotonic()
            await client.call(3, 1, MetadataRequest(topics=[]))
            first = time.monotonic() - sent
            await client.call(3, 1, MetadataRequest(topics=[]))
            second = time.monotonic() - sent
            carried = await client.call(3, 4, MetadataRequest(topics=[], allow_auto_topic_creation=False))
            return first, second, carried.throttle_time_ms

    first, second, carried = run_node(tmp_path, scenario)
    assert first < 0.9, f"the v1 answer took {first:.3f}s: it was held back"
    assert second >= 1.0, f"the next answer came {second:.3f}s after the first request: not muted"
    assert carried == 1000
