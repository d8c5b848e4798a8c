"""Our admin client against clusters that move and fail: a scripted two-node cluster whose controller and
coordinators move (and whose leaders lack a ListOffsets version), and librdkafka's mock cluster with
per-leader requests, retriable, final and persisting errors, and APIs it lacks."""

from __future__ import annotations

import asyncio
import time

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
    ConfigResource,
    CreatedTopic,
    NewTopic,
    OffsetSpec,
)
from kconform.harness.client.errors import BrokerError, NoCommonVersion

from ..support.admin_client import _CALL_TIMEOUT, TOPIC, _code, _name, admin_run, produce


@pytest.fixture
def mock():
    from kconform.harness.targets.rdkafka_mock import RdkafkaMockCluster

    with RdkafkaMockCluster(brokers=3) as cluster:
        yield cluster


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
