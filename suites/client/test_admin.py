"""The reference client's admin client against the reference broker and librdkafka's mock cluster.

Every call is checked by what the broker reports back afterwards (a created topic is described, an
altered config is read again, deleted records move the earliest offset), not by the call's own return.
Groups are formed by confluent-kafka consumers, classic and KIP-848 alike."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from kconform.codecs import (
    DecodeError,
    FrameDecoder,
    api_schema,
    decode_request,
    encode_response,
    size_prefixed,
)
from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    ApiVersionsResponse,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    CreateTopicsResponse,
    DescribeGroupsResponse,
    FindCoordinatorResponse,
    ListOffsetsResponse,
    MetadataResponse,
)
from kconform.harness.client.admin import (
    Admin,
    AdminTimedOut,
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    CreatedTopic,
    IsolationLevel,
    NewTopic,
    OffsetAndMetadata,
    OffsetSpec,
    decode_consumer_assignment,
)
from kconform.harness.client.errors import BrokerError, NoCommonVersion

TOPIC = ConfigResourceType.TOPIC
BROKER = ConfigResourceType.BROKER
_CALL_TIMEOUT = 30  # seconds; a hang fails the test instead of stalling the suite


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def admin_run(bootstrap: str, body, **config):
    """Run ``await body(admin)`` with a started Admin, in a fresh event loop."""

    async def main():
        settings = {"bootstrap.servers": bootstrap, "default.api.timeout.ms": 10_000, **config}
        async with Admin(settings) as admin:
            return await body(admin)

    return asyncio.run(asyncio.wait_for(main(), _CALL_TIMEOUT))


def _code(outcome) -> int:
    assert isinstance(outcome, BrokerError), f"expected a broker error, got {outcome!r}"
    return outcome.code


def produce(bootstrap: str, topic: str, partition: int, timestamps: list[int]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    failures = []
    for i, ts in enumerate(timestamps):
        producer.produce(
            topic,
            value=f"v{i}".encode(),
            partition=partition,
            timestamp=ts,
            on_delivery=lambda err, _msg: failures.append(err) if err else None,
        )
    assert producer.flush(15) == 0
    assert failures == []


def join_group(bootstrap: str, group_id: str, topic: str, partitions: int, protocol: str):
    """A confluent-kafka consumer in ``group_id`` that owns every partition of ``topic``, with
    partition 0's offset 1 committed. The caller closes it."""
    from confluent_kafka import Consumer, TopicPartition

    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "group.protocol": protocol,
    }
    if protocol == "classic":
        config["session.timeout.ms"] = 10_000
    consumer = Consumer(config)
    consumer.subscribe([topic])
    deadline = time.monotonic() + 20
    while len(consumer.assignment()) < partitions:
        assert time.monotonic() < deadline, f"{protocol} consumer got no full assignment"
        consumer.poll(0.2)
    consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    return consumer


# ---- fixtures --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from kconform.reference_broker.process import start_broker_process

    process = start_broker_process(
        tmp_path_factory.mktemp("admin-broker"),
        overrides={"group.initial.rebalance.delay.ms": "0"},
    )
    yield process
    process.stop()


@pytest.fixture(scope="module")
def bootstrap(broker) -> str:
    return broker.bootstrap


@pytest.fixture
def topic(bootstrap) -> str:
    """A fresh 3-partition topic, made with confluent-kafka so our own create is not under test."""
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.admin import NewTopic as PeerNewTopic

    name = _name("t")
    peer = AdminClient({"bootstrap.servers": bootstrap})
    peer.create_topics([PeerNewTopic(name, num_partitions=3, replication_factor=1)])[name].result(15)
    return name


@pytest.fixture
def mock():
    from kconform.harness.targets.rdkafka_mock import RdkafkaMockCluster

    with RdkafkaMockCluster(brokers=3) as cluster:
        yield cluster


# ---- topics ----------------------------------------------------------------------------------------


def test_create_topics_reports_each_topic_and_the_broker_agrees(bootstrap):
    made, dry, bad, overridden = _name("made"), _name("dry"), _name("bad"), _name("cfg")

    async def body(admin: Admin):
        created = await admin.create_topics(
            [
                NewTopic(made, 3, 1),
                NewTopic(bad, 0, 1),
                NewTopic(overridden, 1, 1, {"retention.ms": "123456", "cleanup.policy": "compact"}),
            ]
        )
        validated = await admin.create_topics([NewTopic(dry, 2, 1)], validate_only=True)
        again = await admin.create_topics([NewTopic(made, 3, 1)])
        described = await admin.describe_topics([made, overridden, dry, bad])
        listed = await admin.list_topics()
        return created, validated, again, described, listed

    created, validated, again, described, listed = admin_run(bootstrap, body)

    assert isinstance(created[made], CreatedTopic)
    assert (created[made].num_partitions, created[made].replication_factor) == (3, 1)
    assert _code(created[bad]) == Errors.INVALID_PARTITIONS
    assert created[overridden].configs["retention.ms"].value == "123456"
    assert created[overridden].configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert created[overridden].configs["segment.ms"].is_default
    assert isinstance(validated[dry], CreatedTopic) and validated[dry].num_partitions == 2
    assert _code(again[made]) == Errors.TOPIC_ALREADY_EXISTS

    description = described[made]
    assert description.topic_id == created[made].topic_id
    assert not description.is_internal
    assert [p.partition for p in description.partitions] == [0, 1, 2]
    assert all(p.leader == 1 and p.replicas == (1,) and p.isr == (1,) for p in description.partitions)
    assert len(described[overridden].partitions) == 1
    # validate_only created nothing, and neither did the refused topic
    assert _code(described[dry]) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert _code(described[bad]) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert {made, overridden} <= set(listed) and not {dry, bad} & set(listed)
    assert listed[made].topic_id == created[made].topic_id


def test_create_topic_with_replica_assignments(bootstrap):
    name = _name("assigned")

    async def body(admin: Admin):
        created = await admin.create_topics([NewTopic(name, assignments={0: [1], 1: [1]})])
        return created, await admin.describe_topics([name])

    created, described = admin_run(bootstrap, body)
    assert created[name].num_partitions == 2
    assert [(p.partition, p.replicas) for p in described[name].partitions] == [(0, (1,)), (1, (1,))]


def test_delete_topics_then_the_topic_is_gone(bootstrap, topic):
    async def body(admin: Admin):
        deleted = await admin.delete_topics([topic, _name("never")])
        return deleted, await admin.describe_topics([topic]), await admin.list_topics()

    deleted, described, listed = admin_run(bootstrap, body)
    assert deleted[topic] is None
    assert _code(deleted[next(k for k in deleted if k != topic)]) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert _code(described[topic]) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert topic not in listed


def test_list_topics_hides_internal_topics_unless_asked(bootstrap, topic):
    group = _name("g")
    consumer = join_group(bootstrap, group, topic, 3, "classic")  # makes __consumer_offsets exist
    consumer.close()

    async def body(admin: Admin):
        return await admin.list_topics(), await admin.list_topics(include_internal=True)

    plain, everything = admin_run(bootstrap, body)
    assert "__consumer_offsets" not in plain
    assert everything["__consumer_offsets"].is_internal
    assert topic in plain and not plain[topic].is_internal


def test_raise_errors_raises_the_first_item_error(bootstrap, topic):
    async def body(admin: Admin):
        return await admin.create_topics([NewTopic(topic, 1, 1)], raise_errors=True)

    with pytest.raises(BrokerError) as caught:
        admin_run(bootstrap, body)
    assert caught.value.code == Errors.TOPIC_ALREADY_EXISTS


@pytest.mark.parametrize(
    "call",
    [
        lambda a: a.create_topics([NewTopic("")]),
        lambda a: a.create_topics([NewTopic("x", 1, 1), NewTopic("x", 2, 1)]),
        lambda a: a.create_topics([NewTopic("x", 3, 1, assignments={0: [1]})]),
        lambda a: a.delete_topics([""]),
        lambda a: a.describe_topics([None]),
        lambda a: a.list_offsets({("", 0): OffsetSpec.latest()}),
        lambda a: a.list_offsets({("t", -1): OffsetSpec.latest()}),
        lambda a: a.list_offsets({("t", 0): -1}),
        lambda a: a.delete_records({("t", 0): -5}),
        lambda a: a.describe_configs([ConfigResource(BROKER, "one")]),
        lambda a: a.incremental_alter_configs({ConfigResource(TOPIC, "t"): [AlterConfigOp("")]}),
        lambda a: a.describe_groups([""]),
        lambda a: a.list_consumer_group_offsets(""),
    ],
    ids=[
        "empty-topic",
        "duplicate-topic",
        "assignments-and-count",
        "delete-empty",
        "describe-none",
        "offsets-empty-topic",
        "offsets-negative-partition",
        "offsets-not-a-spec",
        "delete-records-bad-offset",
        "broker-resource-not-an-id",
        "alter-without-name",
        "group-empty",
        "offsets-group-empty",
    ],
)
def test_bad_input_fails_before_anything_is_sent(call):
    # Nothing listens on port 1: reaching the network would raise ConnectionLost, not ValueError.
    async def main():
        admin = Admin({"bootstrap.servers": "127.0.0.1:1", "default.api.timeout.ms": 1000})
        try:
            with pytest.raises(ValueError):
                await call(admin)
        finally:
            await admin.close()

    asyncio.run(main())


def test_offset_spec_refuses_a_negative_timestamp():
    with pytest.raises(ValueError):
        OffsetSpec.for_timestamp(-1)


# ---- configs ---------------------------------------------------------------------------------------


def test_alter_configs_set_append_subtract_delete_read_back(bootstrap, topic):
    resource = ConfigResource(TOPIC, topic)

    async def read(admin: Admin, *names):
        entries = (await admin.describe_configs([resource], raise_errors=True))[resource]
        return [entries[n] for n in names]

    async def body(admin: Admin):
        steps = {}
        ops = [
            AlterConfigOp("retention.ms", "3600000"),
            AlterConfigOp("cleanup.policy", "compact", AlterConfigOpType.APPEND),
        ]
        steps["set"] = await admin.incremental_alter_configs({resource: ops})
        steps["after_set"] = await read(admin, "retention.ms", "cleanup.policy")
        ops = [AlterConfigOp("cleanup.policy", "delete", AlterConfigOpType.SUBTRACT)]
        steps["subtract"] = await admin.incremental_alter_configs({resource: ops})
        steps["after_subtract"] = await read(admin, "cleanup.policy")
        ops = [AlterConfigOp("retention.ms", "1", AlterConfigOpType.SET)]
        steps["dry"] = await admin.incremental_alter_configs({resource: ops}, validate_only=True)
        steps["after_dry"] = await read(admin, "retention.ms")
        ops = [AlterConfigOp("retention.ms", op=AlterConfigOpType.DELETE)]
        steps["delete"] = await admin.incremental_alter_configs({resource: ops})
        steps["after_delete"] = await read(admin, "retention.ms")
        ops = [AlterConfigOp("retention.ms", "not-a-number")]
        steps["invalid"] = await admin.incremental_alter_configs({resource: ops})
        return steps

    steps = admin_run(bootstrap, body)
    assert steps["set"] == {resource: None}
    retention, policy = steps["after_set"]
    assert (retention.value, retention.source, retention.is_default) == (
        "3600000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
        False,
    )
    assert policy.value == "delete,compact"
    assert steps["subtract"] == {resource: None}
    assert steps["after_subtract"][0].value == "compact"
    assert steps["dry"] == {resource: None}
    assert steps["after_dry"][0].value == "3600000"  # validate_only changed nothing
    assert steps["delete"] == {resource: None}
    (retention,) = steps["after_delete"]
    assert retention.is_default and retention.source == ConfigSource.DEFAULT_CONFIG
    assert retention.value == "604800000"
    assert _code(steps["invalid"][resource]) == Errors.INVALID_CONFIG


def test_describe_configs_of_a_broker_and_of_a_missing_topic(bootstrap):
    broker_resource, missing = ConfigResource(BROKER, "1"), ConfigResource(TOPIC, _name("missing"))

    async def body(admin: Admin):
        return await admin.describe_configs([broker_resource, missing], include_synonyms=True)

    found = admin_run(bootstrap, body)
    entries = found[broker_resource]
    assert entries["group.initial.rebalance.delay.ms"].value == "0"  # the broker's own override
    assert entries["group.initial.rebalance.delay.ms"].source == ConfigSource.STATIC_BROKER_CONFIG
    assert entries["num.partitions"].is_default
    assert _code(found[missing]) == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_broker_config_set_then_delete(bootstrap):
    resource = ConfigResource(BROKER, "1")
    name = "log.cleaner.threads"

    async def body(admin: Admin):
        before = (await admin.describe_configs([resource]))[resource][name]
        changed = await admin.incremental_alter_configs({resource: [AlterConfigOp(name, "2")]})
        during = (await admin.describe_configs([resource]))[resource][name]
        reset = await admin.incremental_alter_configs(
            {resource: [AlterConfigOp(name, op=AlterConfigOpType.DELETE)]}
        )
        after = (await admin.describe_configs([resource]))[resource][name]
        return before, changed, during, reset, after

    before, changed, during, reset, after = admin_run(bootstrap, body)
    assert changed == {resource: None} and reset == {resource: None}
    assert (during.value, during.source) == ("2", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert (after.value, after.source) == (before.value, before.source)


# ---- offsets and records ---------------------------------------------------------------------------


def test_list_offsets_every_spec(bootstrap, topic):
    base = int(time.time() * 1000) - 60_000
    stamps = [base + 1000, base + 5000, base + 3000, base + 2000]
    produce(bootstrap, topic, 0, stamps)
    p0, p1 = (topic, 0), (topic, 1)

    async def body(admin: Admin):
        first = await admin.list_offsets(
            {p0: OffsetSpec.earliest(), p1: OffsetSpec.latest(), (topic, 7): OffsetSpec.latest()}
        )
        specs = {
            "latest": OffsetSpec.latest(),
            "max": OffsetSpec.max_timestamp(),
            "at-2500": OffsetSpec.for_timestamp(base + 2500),
            "at-start": OffsetSpec.for_timestamp(0),
            "after-all": OffsetSpec.for_timestamp(base + 9000),
        }
        one_by_one = {k: (await admin.list_offsets({p0: s}, raise_errors=True))[p0] for k, s in specs.items()}
        committed = await admin.list_offsets(
            {p0: OffsetSpec.latest()}, isolation_level=IsolationLevel.READ_COMMITTED
        )
        return first, one_by_one, committed

    first, found, committed = admin_run(bootstrap, body)
    assert first[p0].offset == 0
    assert first[p1].offset == 0  # nothing produced there
    assert _code(first[(topic, 7)]) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert found["latest"].offset == 4
    assert (found["max"].offset, found["max"].timestamp) == (1, base + 5000)
    assert (found["at-2500"].offset, found["at-2500"].timestamp) == (1, base + 5000)
    assert (found["at-start"].offset, found["at-start"].timestamp) == (0, base + 1000)
    assert found["after-all"].offset == -1
    assert found["latest"].leader_epoch == 0
    assert committed[p0].offset == 4  # no transactions: the last stable offset is the high watermark


def test_list_offsets_of_an_unknown_topic_fails_at_once(bootstrap):
    missing = (_name("missing"), 0)

    async def body(admin: Admin):
        started = time.monotonic()
        result = await admin.list_offsets({missing: OffsetSpec.latest()})
        return result, time.monotonic() - started

    result, elapsed = admin_run(bootstrap, body)
    assert _code(result[missing]) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert elapsed < 2  # not retried until the timeout, as Java's PartitionLeaderStrategy


def test_delete_records_moves_the_earliest_offset(bootstrap, topic):
    produce(bootstrap, topic, 0, [1_000_000 + i for i in range(5)])
    produce(bootstrap, topic, 1, [1_000_000 + i for i in range(3)])
    p0, p1, p2 = (topic, 0), (topic, 1), (topic, 2)

    async def body(admin: Admin):
        deleted = await admin.delete_records({p0: 2, p1: -1, p2: 10})
        earliest = await admin.list_offsets({p: OffsetSpec.earliest() for p in (p0, p1, p2)})
        return deleted, earliest

    deleted, earliest = admin_run(bootstrap, body)
    assert deleted[p0] == 2 and deleted[p1] == 3  # -1: up to the high watermark
    assert _code(deleted[p2]) == Errors.OFFSET_OUT_OF_RANGE  # beyond the high watermark of 0
    assert (earliest[p0].offset, earliest[p1].offset, earliest[p2].offset) == (2, 3, 0)


# ---- groups ----------------------------------------------------------------------------------------


def test_classic_group_listed_described_and_offsets(bootstrap, topic):
    group = _name("classic")
    consumer = join_group(bootstrap, group, topic, 3, "classic")
    try:

        async def body(admin: Admin):
            return (
                await admin.list_groups(),
                await admin.list_groups(states=["Empty"]),
                await admin.list_groups(types=["classic"], states=["Stable"]),
                await admin.describe_groups([group]),
                await admin.describe_consumer_groups([group]),
                await admin.list_consumer_group_offsets(group),
                await admin.list_consumer_group_offsets(group, [(topic, 0), (topic, 2)]),
            )

        listed, empty, stable, described, as_consumer, offsets, some = admin_run(bootstrap, body)
        client_id = consumer.memberid()
    finally:
        consumer.close()

    listing = next(g for g in listed if g.group_id == group)
    assert (listing.protocol_type, listing.state, listing.type) == ("consumer", "Stable", "classic")
    assert group not in {g.group_id for g in empty}
    assert group in {g.group_id for g in stable}

    description = described[group]
    assert (description.type, description.state, description.protocol_type) == (
        "classic",
        "Stable",
        "consumer",
    )
    assert description.protocol == "range"  # librdkafka's first default assignor
    assert description.coordinator == 1
    (member,) = description.members
    assert member.member_id == client_id
    assert member.assignment == [(topic, 0), (topic, 1), (topic, 2)]
    assert member.subscribed_topics == [topic]
    assert _code(as_consumer[group]) == Errors.GROUP_ID_NOT_FOUND  # a classic group is not a consumer group

    assert offsets == {(topic, 0): OffsetAndMetadata(1, offsets[(topic, 0)].leader_epoch, "")}
    assert some[(topic, 0)].offset == 1 and some[(topic, 2)] is None


def test_consumer_protocol_group_listed_described_and_offsets(bootstrap, topic):
    group = _name("kip848")
    consumer = join_group(bootstrap, group, topic, 3, "consumer")
    try:

        async def body(admin: Admin):
            return (
                await admin.list_groups(types=["consumer"]),
                await admin.describe_groups([group]),
                await admin.describe_consumer_groups([group]),
                await admin.list_consumer_group_offsets(group),
            )

        listed, described, direct, offsets = admin_run(bootstrap, body)
    finally:
        consumer.close()

    listing = next(g for g in listed if g.group_id == group)
    assert (listing.type, listing.protocol_type) == ("consumer", "consumer")
    for description in (described[group], direct[group]):
        assert description.type == "consumer" and description.state == "Stable"
        assert description.protocol in ("uniform", "range")
        assert description.group_epoch >= 1 and description.assignment_epoch == description.group_epoch
        (member,) = description.members
        assert member.subscribed_topics == [topic]
        assert member.assignment == [(topic, 0), (topic, 1), (topic, 2)]
        assert member.target_assignment == member.assignment
        assert member.member_epoch == description.group_epoch
    assert offsets[(topic, 0)].offset == 1


def test_unknown_group(bootstrap):
    group = _name("nobody")

    async def body(admin: Admin):
        conn = await admin.network.any_connection()
        return (
            await admin.describe_groups([group]),
            await admin.describe_consumer_groups([group]),
            await admin.list_consumer_group_offsets(group),
            conn.version_for(15),
        )

    described, as_consumer, offsets, describe_version = admin_run(bootstrap, body)
    if describe_version >= 6:
        # GroupMetadataManager.describeGroups: GROUP_ID_NOT_FOUND from DescribeGroups v6 (KIP-1043), which
        # Java's admin reports as GroupIdNotFoundException (DescribeConsumerGroupsHandler.handleError)
        assert _code(described[group]) == Errors.GROUP_ID_NOT_FOUND
    else:
        assert described[group].state == "Dead" and described[group].members == []
    assert _code(as_consumer[group]) == Errors.GROUP_ID_NOT_FOUND
    assert offsets == {}


def test_consumer_protocol_bytes_decode():
    assignment = ConsumerProtocolAssignment(
        assigned_partitions=[ConsumerProtocolAssignment.TopicPartition(topic="a", partitions=[2, 0])]
    )
    data = (3).to_bytes(2, "big") + assignment.encode(3)
    assert decode_consumer_assignment(data) == [("a", 0), ("a", 2)]
    # a newer version than the codecs know is read as the newest they know (Java's ConsumerProtocol)
    assert decode_consumer_assignment((9).to_bytes(2, "big") + assignment.encode(3)) == [("a", 0), ("a", 2)]
    assert decode_consumer_assignment(b"") == []


# ---- cluster ---------------------------------------------------------------------------------------


def test_describe_cluster(bootstrap, broker):
    async def body(admin: Admin):
        return await admin.describe_cluster(), admin.network.metadata.cluster_id

    cluster, metadata_cluster_id = admin_run(bootstrap, body)
    assert cluster.cluster_id == metadata_cluster_id and cluster.cluster_id
    assert cluster.controller_id == 1
    assert list(cluster.brokers) == [1]
    assert cluster.brokers[1].port == broker.port


# ---- a scripted two-node cluster: controllers and coordinators that move ----------------------------


class ScriptedCluster:
    """Two nodes on real sockets answering from handlers, ``handlers[api_key](node, request) -> body``;
    they offer ApiVersions and exactly the handled APIs, at the versions given. The reference broker
    is one node, so a moved controller or coordinator is staged here. ``log`` records
    (node, API name) per request."""

    def __init__(self, handlers: dict, versions: dict[int, int], nodes=(1, 2)) -> None:
        self.handlers = handlers
        self.versions = versions
        self.nodes = nodes
        self.ports: dict[int, int] = {}
        self.log: list[tuple[int, str]] = []
        self.controller = nodes[0]
        self._servers = []

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ports[self.nodes[0]]}"

    def metadata(self, node: int, request) -> MetadataResponse:
        brokers = [
            MetadataResponse.MetadataResponseBroker(node_id=n, host="127.0.0.1", port=self.ports[n])
            for n in self.nodes
        ]
        return MetadataResponse(
            brokers=brokers, cluster_id="scripted", controller_id=self.controller, topics=[]
        )

    async def __aenter__(self) -> ScriptedCluster:
        for node in self.nodes:
            server = await asyncio.start_server(lambda r, w, n=node: self._serve(n, r, w), "127.0.0.1", 0)
            self._servers.append(server)
            self.ports[node] = server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info) -> None:
        for server in self._servers:
            server.close()

    def api_calls(self, name: str) -> list[int]:
        """The nodes that received ``name`` requests, in order."""
        return [node for node, api in self.log if api == name]

    async def _serve(self, node: int, reader, writer) -> None:
        frames = FrameDecoder()
        try:
            while data := await reader.read(65536):
                frames.feed(data)
                while (frame := frames.next_frame()) is not None:
                    header, request = decode_request(frame)
                    key, version = header.request_api_key, header.request_api_version
                    self.log.append((node, api_schema(key).name))
                    if key == 18:
                        offered = {18: 3, 3: 12, **self.versions}
                        body = ApiVersionsResponse(
                            api_keys=[
                                ApiVersionsResponse.ApiVersion(api_key=k, min_version=0, max_version=v)
                                for k, v in sorted(offered.items())
                            ]
                        )
                    elif key == 3 and key not in self.handlers:
                        body = self.metadata(node, request)
                    else:
                        body = self.handlers[key](node, request)
                    writer.write(size_prefixed(encode_response(key, version, header.correlation_id, body)))
        except ConnectionError:
            pass
        finally:
            writer.close()


def _created(name: str, code: int) -> CreateTopicsResponse:
    return CreateTopicsResponse(
        topics=[
            CreateTopicsResponse.CreatableTopicResult(
                name=name, error_code=code, num_partitions=1, replication_factor=1, configs=[]
            )
        ]
    )


def test_create_topics_follows_a_moved_controller():
    async def main():
        def create(node, request):
            (topic,) = request.topics
            if node != cluster.controller:
                return _created(topic.name, Errors.NOT_CONTROLLER)
            return _created(topic.name, 0)

        async with ScriptedCluster({19: create}, {19: 7}) as cluster:
            async with Admin({"bootstrap.servers": cluster.bootstrap}) as admin:
                cluster.controller = 2  # moves after the admin's first metadata named node 1
                created = await admin.create_topics([NewTopic("moved", 1, 1)])
                cluster.controller = 3  # a node no metadata lists: every answer is NOT_CONTROLLER
                started = time.monotonic()
                stuck = await admin.create_topics([NewTopic("stuck", 1, 1)], timeout_ms=600)
                return cluster, created, stuck, time.monotonic() - started

    cluster, created, stuck, elapsed = asyncio.run(asyncio.wait_for(main(), _CALL_TIMEOUT))
    assert isinstance(created["moved"], CreatedTopic)
    calls = cluster.api_calls("CreateTopics")
    assert calls[:2] == [1, 2]  # node 1 said NOT_CONTROLLER; fresh metadata named node 2
    first, second = [i for i, (_, api) in enumerate(cluster.log) if api == "CreateTopics"][:2]
    assert "Metadata" in [api for _, api in cluster.log[first:second]]
    assert isinstance(stuck["stuck"], AdminTimedOut)
    assert stuck["stuck"].last_error.code == Errors.NOT_CONTROLLER
    assert 0.5 < elapsed < 5


def test_group_calls_follow_a_moved_coordinator_and_wait_out_loading():
    topic = "orders"
    subscription = ConsumerProtocolSubscription(topics=[topic])
    assignment = ConsumerProtocolAssignment(
        assigned_partitions=[ConsumerProtocolAssignment.TopicPartition(topic=topic, partitions=[1, 0])]
    )

    async def main():
        state = {"coordinator": 1, "loading": 1}

        def find(node, request):
            coordinator = state["coordinator"]
            return FindCoordinatorResponse(
                coordinators=[
                    FindCoordinatorResponse.Coordinator(
                        key=k, node_id=coordinator, host="127.0.0.1", port=cluster.ports[coordinator]
                    )
                    for k in request.coordinator_keys
                ]
            )

        def describe(node, request):
            (group_id,) = request.groups
            group = DescribeGroupsResponse.DescribedGroup(group_id=group_id)
            if node != state["coordinator"]:
                group.error_code = Errors.NOT_COORDINATOR
            elif state["loading"]:
                state["loading"] -= 1
                group.error_code = Errors.COORDINATOR_LOAD_IN_PROGRESS
            else:
                group.group_state, group.protocol_type, group.protocol_data = "Stable", "consumer", "range"
                group.members = [
                    DescribeGroupsResponse.DescribedGroupMember(
                        member_id="m-1",
                        client_id="c",
                        client_host="/127.0.0.1",
                        member_metadata=(3).to_bytes(2, "big") + subscription.encode(3),
                        member_assignment=(3).to_bytes(2, "big") + assignment.encode(3),
                    )
                ]
            return DescribeGroupsResponse(groups=[group])

        async with ScriptedCluster({10: find, 15: describe}, {10: 4, 15: 5}) as cluster:
            async with Admin({"bootstrap.servers": cluster.bootstrap}) as admin:
                await admin.network.find_coordinator("g")  # cached: node 1
                state["coordinator"] = 2
                described = await admin.describe_groups(["g"])
                return cluster, described

    cluster, described = asyncio.run(asyncio.wait_for(main(), _CALL_TIMEOUT))
    description = described["g"]
    assert description.type == "classic" and description.coordinator == 2
    (member,) = description.members
    assert member.assignment == [(topic, 0), (topic, 1)] and member.subscribed_topics == [topic]
    # No ConsumerGroupDescribe on offer, so DescribeGroups: node 1 refused (NOT_COORDINATOR), a fresh
    # lookup named node 2, which was loading once and then answered.
    assert "ConsumerGroupDescribe" not in {api for _, api in cluster.log}
    assert cluster.api_calls("DescribeGroups") == [1, 2, 2]
    assert len(cluster.api_calls("FindCoordinator")) == 2


def test_list_offsets_spec_too_new_for_the_leader_fails_alone():
    """A leader offering ListOffsets v6: max_timestamp (v7+) fails with NoCommonVersion, the other
    partition's spec is still asked for and answered, at v6."""

    async def main():
        asked = []

        def metadata(node, request):
            response = cluster.metadata(node, request)
            partitions = [
                MetadataResponse.MetadataResponsePartition(
                    partition_index=p, leader_id=2, replica_nodes=[2], isr_nodes=[2]
                )
                for p in (0, 1)
            ]
            response.topics = [MetadataResponse.MetadataResponseTopic(name="t", partitions=partitions)]
            return response

        def list_offsets(node, request):
            asked.append(
                (
                    node,
                    [(t.name, p.partition_index, p.timestamp) for t in request.topics for p in t.partitions],
                )
            )
            partition = ListOffsetsResponse.ListOffsetsPartitionResponse(
                partition_index=0, offset=42, timestamp=-1
            )
            return ListOffsetsResponse(
                topics=[ListOffsetsResponse.ListOffsetsTopicResponse(name="t", partitions=[partition])]
            )

        async with ScriptedCluster({3: metadata, 2: list_offsets}, {2: 6}) as cluster:
            async with Admin({"bootstrap.servers": cluster.bootstrap}) as admin:
                result = await admin.list_offsets(
                    {("t", 0): OffsetSpec.latest(), ("t", 1): OffsetSpec.max_timestamp()}
                )
                return result, asked

    result, asked = asyncio.run(asyncio.wait_for(main(), _CALL_TIMEOUT))
    assert result[("t", 0)].offset == 42
    assert isinstance(result[("t", 1)], NoCommonVersion)
    assert asked == [(2, [("t", 0, -1)])]  # to the leader, node 2, without the partition it cannot serve


# ---- librdkafka's mock cluster ---------------------------------------------------------------------


@pytest.mark.peer
def test_mock_describe_list_offsets_and_cluster(mock):
    name = _name("mock")
    mock.create_topic(name, 4, 3)
    base = int(time.time() * 1000) - 10_000
    produce(mock.bootstrap, name, 1, [base, base + 10, base + 20])

    async def body(admin: Admin):
        return (
            await admin.describe_topics([name]),
            await admin.list_topics(),
            await admin.list_offsets(
                {
                    (name, 1): OffsetSpec.latest(),
                    (name, 0): OffsetSpec.latest(),
                    (name, 2): OffsetSpec.earliest(),
                    (name, 9): OffsetSpec.latest(),
                }
            ),
            await admin.describe_cluster(),
        )

    described, listed, offsets, cluster = admin_run(mock.bootstrap, body)
    partitions = described[name].partitions
    assert [p.partition for p in partitions] == [0, 1, 2, 3]
    assert all(len(p.replicas) == 3 and p.leader in p.replicas for p in partitions)
    assert name in listed
    assert offsets[(name, 1)].offset == 3 and offsets[(name, 0)].offset == 0
    assert offsets[(name, 2)].offset == 0
    assert _code(offsets[(name, 9)]) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert sorted(cluster.brokers) == [1, 2, 3]  # from Metadata: the mock has no DescribeCluster
    assert cluster.controller_id is None  # the mock names node 0, none of its brokers


@pytest.mark.peer
def test_mock_list_offsets_are_asked_of_each_leader(mock):
    """Partitions led by different brokers: each broker answers only for what it leads (the mock
    refuses the others with NOT_LEADER_OR_FOLLOWER), so correct answers prove the per-leader routing."""
    name = _name("leaders")
    mock.create_topic(name, 3, 1)
    for partition, leader in enumerate((1, 2, 3)):
        mock.set_partition_leader(name, partition, leader)
    for partition in range(3):
        produce(mock.bootstrap, name, partition, [1_000 + i for i in range(partition + 1)])

    async def body(admin: Admin):
        described = await admin.describe_topics([name])
        offsets = await admin.list_offsets(
            {(name, p): OffsetSpec.latest() for p in range(3)}, raise_errors=True
        )
        return described, offsets

    described, offsets = admin_run(mock.bootstrap, body)
    assert [p.leader for p in described[name].partitions] == [1, 2, 3]
    assert [offsets[(name, p)].offset for p in range(3)] == [1, 2, 3]


@pytest.mark.peer
def test_mock_retries_retriable_errors(mock):
    name = _name("retry")
    mock.create_topic(name, 1, 1)
    produce(mock.bootstrap, name, 0, [1_000, 2_000])
    mock.push_request_errors(
        2, [Errors.NOT_LEADER_OR_FOLLOWER, Errors.LEADER_NOT_AVAILABLE, Errors.REQUEST_TIMED_OUT]
    )

    async def body(admin: Admin):
        started = time.monotonic()
        offsets = await admin.list_offsets({(name, 0): OffsetSpec.latest()})
        return offsets, time.monotonic() - started

    offsets, elapsed = admin_run(mock.bootstrap, body)
    assert offsets[(name, 0)].offset == 2
    assert elapsed >= 0.1 * 0.8 * 3  # three waits of at least retry.backoff.ms less jitter


@pytest.mark.peer
def test_mock_group_offsets_retry_coordinator_errors(mock):
    name = _name("group")
    mock.create_topic(name, 2, 1)
    group = _name("g")
    wanted = [(name, 0), (name, 1)]

    async def body(admin: Admin):
        mock.push_request_errors(
            9, [Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE]
        )
        started = time.monotonic()
        retried = await admin.list_consumer_group_offsets(group, wanted)
        elapsed = time.monotonic() - started
        mock.push_request_errors(9, [Errors.GROUP_AUTHORIZATION_FAILED])
        with pytest.raises(BrokerError) as refused:
            await admin.list_consumer_group_offsets(group, wanted)
        # The mock answers a request for all of a group's offsets (null topics) with a null topics
        # array, which OffsetFetch v6 does not allow: reported as the codecs' DecodeError.
        with pytest.raises(DecodeError) as unreadable:
            await admin.list_consumer_group_offsets(group)
        return retried, elapsed, refused.value, unreadable.value

    retried, elapsed, refused, unreadable = admin_run(mock.bootstrap, body)
    assert retried == {(name, 0): None, (name, 1): None}
    assert elapsed >= 0.1 * 0.8 * 3
    assert refused.code == Errors.GROUP_AUTHORIZATION_FAILED
    assert "OffsetFetchResponse v6" in str(unreadable) and "null array" in str(unreadable)


@pytest.mark.peer
def test_mock_final_and_persisting_errors(mock):
    name = _name("errors")
    mock.create_topic(name, 1, 1)

    async def body(admin: Admin):
        mock.push_request_errors(2, [Errors.TOPIC_AUTHORIZATION_FAILED])
        final = await admin.list_offsets({(name, 0): OffsetSpec.latest()})
        mock.push_request_errors(2, [Errors.NOT_LEADER_OR_FOLLOWER] * 100)
        started = time.monotonic()
        timed_out = await admin.list_offsets({(name, 0): OffsetSpec.latest()}, timeout_ms=800)
        return final, timed_out, time.monotonic() - started

    final, timed_out, elapsed = admin_run(mock.bootstrap, body)
    assert _code(final[(name, 0)]) == Errors.TOPIC_AUTHORIZATION_FAILED
    outcome = timed_out[(name, 0)]
    assert isinstance(outcome, AdminTimedOut)
    assert (
        isinstance(outcome.last_error, BrokerError)
        and outcome.last_error.code == Errors.NOT_LEADER_OR_FOLLOWER
    )
    assert 0.7 < elapsed < 5


@pytest.mark.peer
def test_mock_apis_it_lacks_fail_with_no_common_version(mock):
    name = _name("lacks")
    mock.create_topic(name, 1, 1)
    resource = ConfigResource(TOPIC, name)

    async def body(admin: Admin):
        outcomes = {
            "create": (await admin.create_topics([NewTopic(_name("x"), 1, 1)])),
            "delete": await admin.delete_topics([name]),
            "describe_configs": await admin.describe_configs([resource]),
            "alter_configs": await admin.incremental_alter_configs(
                {resource: [AlterConfigOp("retention.ms", "1")]}
            ),
            "delete_records": await admin.delete_records({(name, 0): 0}),
            "describe_groups": await admin.describe_groups(["g"]),
        }
        with pytest.raises(NoCommonVersion):
            await admin.list_groups()
        return outcomes, await admin.describe_topics([name])

    outcomes, still_there = admin_run(mock.bootstrap, body)
    for call, results in outcomes.items():
        (outcome,) = results.values()
        assert isinstance(outcome, NoCommonVersion), f"{call}: {outcome!r}"
    assert len(still_there[name].partitions) == 1  # the refused delete deleted nothing
