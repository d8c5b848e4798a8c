"""The broker answers as a chosen Apache Kafka release: ApiVersions gives exactly that release's rows
for every API we implement, the versions it serves are that release's, and kafka-python's own
broker-version inference, run against it with no api_version setting, names that release.

The expected rows are read here from the committed release table (``codecs/definitions/
api-versions.tsv``, what a real broker of each release advertises), not from the broker's code."""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path

import pytest

from kconform.codecs.generate.extract import DEFINITIONS_DIR
from kconform.codecs.messages import (
    ApiVersionsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
    MetadataRequest,
    OffsetFetchRequest,
    ProduceRequest,
)
from kconform.reference_broker.forwarding import broker_handlers
from kconform.reference_broker.process import start_broker_process

from ..support.rawclient import RawClient

API_VERSIONS = 18


def _release_table() -> dict[str, dict[int, tuple[int, int]]]:
    table: dict[str, dict[int, tuple[int, int]]] = {}
    with (DEFINITIONS_DIR / "api-versions.tsv").open(newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            table.setdefault(row["kafka_version"], {})[int(row["api_key"])] = (
                int(row["min_version"]),
                int(row["max_version"]),
            )
    return table


RELEASES = _release_table()

# Every API some release advertises that the reference broker does not implement. The broker is a
# KRaft broker (ElectLeaders and the reassignment APIs it forwards to the controller, as Kafka's broker
# does): the ZooKeeper-era controller APIs, delegation tokens, raft, share groups, streams groups and
# telemetry are not there (yet).
NOT_IMPLEMENTED = {
    4: "LeaderAndIsr", 5: "StopReplica", 6: "UpdateMetadata", 7: "ControlledShutdown",
    34: "AlterReplicaLogDirs", 38: "CreateDelegationToken",
    39: "RenewDelegationToken", 40: "ExpireDelegationToken", 41: "DescribeDelegationToken",
    52: "Vote", 53: "BeginQuorumEpoch",
    54: "EndQuorumEpoch",
    55: "DescribeQuorum", 56: "AlterPartition", 57: "UpdateFeatures", 58: "Envelope",
    59: "FetchSnapshot", 62: "BrokerRegistration", 63: "BrokerHeartbeat", 64: "UnregisterBroker",
    67: "AllocateProducerIds", 71: "GetTelemetrySubscriptions", 72: "PushTelemetry",
    74: "ListConfigResources", 75: "DescribeTopicPartitions", 76: "ShareGroupHeartbeat",
    77: "ShareGroupDescribe", 78: "ShareFetch", 79: "ShareAcknowledge", 80: "AddRaftVoter",
    81: "RemoveRaftVoter", 83: "InitializeShareGroupState", 84: "ReadShareGroupState",
    85: "WriteShareGroupState", 86: "DeleteShareGroupState", 87: "ReadShareGroupStateSummary",
    88: "StreamsGroupHeartbeat", 89: "StreamsGroupDescribe", 90: "DescribeShareGroupOffsets",
    91: "AlterShareGroupOffsets", 92: "DeleteShareGroupOffsets",
}  # fmt: skip

# Releases kafka-python tells apart only by an API listed above, so it names the one before.
TOLD_APART_BY_UNIMPLEMENTED = {
    "3.4": ((3, 3), "LeaderAndIsr v7"),
}


def test_the_not_implemented_list_is_the_truth():
    every_key = {key for rows in RELEASES.values() for key in rows}
    assert set(broker_handlers()) == every_key - NOT_IMPLEMENTED.keys()


def _expected_rows(version: str) -> dict[int, tuple[int, int]]:
    return {key: rows for key, rows in RELEASES[version].items() if key not in NOT_IMPLEMENTED}


async def _advertised(host: str, port: int) -> dict[int, tuple[int, int]] | None:
    """The ApiVersions v0 answer, or None where the broker closed the connection instead."""
    async with await RawClient.connect(host, port) as client:
        reply = await client.request(API_VERSIONS, 0, ApiVersionsRequest(), timeout=10)
        if reply.closed:
            return None
        assert reply.body.error_code == 0
        return {k.api_key: (k.min_version, k.max_version) for k in reply.body.api_keys}


# kafka-python's fallback probes for brokers without ApiVersions (its VERSION_CHECKS table), as our
# codecs' requests: the first one a broker answers names the release.
_PRE_API_VERSIONS_PROBES = (
    ("0.9", 16, ListGroupsRequest()),
    ("0.8.2", 10, FindCoordinatorRequest(key="kafka-python-default-group")),
    ("0.8.1", 9, OffsetFetchRequest(group_id="kafka-python-default-group")),
    ("0.8.0", 3, MetadataRequest(topics=[])),
)


def test_the_probes_are_kafka_pythons():
    from kafka.protocol.broker_version_data import VERSION_CHECKS

    theirs = [(".".join(map(str, v)), req.API_KEY, req.API_VERSION) for v, req in VERSION_CHECKS]
    assert theirs == [(v, key, 0) for v, key, _ in _PRE_API_VERSIONS_PROBES]


async def _probe_old_release(host: str, port: int) -> str | None:
    for release, api_key, body in _PRE_API_VERSIONS_PROBES:
        async with await RawClient.connect(host, port) as client:
            reply = await client.request(api_key, 0, body, timeout=10)
            if reply.answered:
                return release
    return None


def _kafka_python_inference(bootstrap: str) -> tuple[int, ...]:
    from kafka.net.compat import KafkaNetClient

    client = KafkaNetClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        return tuple(client.check_version(timeout_ms=15000))
    finally:
        client.close()


@pytest.mark.peer
@pytest.mark.parametrize("version", list(RELEASES))
def test_broker_answers_as_the_release(version, tmp_path):
    node = start_broker_process(tmp_path, kafka_version=version)
    try:
        advertised = asyncio.run(_advertised(node.host, node.port))
        expected = _expected_rows(version)
        if API_VERSIONS not in RELEASES[version]:
            # before KIP-35 (0.10.0) a broker closes the connection on an API key it does not know
            assert advertised is None
            assert asyncio.run(_probe_old_release(node.host, node.port)) == version
            return
        assert advertised == expected
        named, reason = TOLD_APART_BY_UNIMPLEMENTED.get(version, (None, None))
        inferred = _kafka_python_inference(node.bootstrap)
        if named is not None:
            assert inferred == named, f"kafka-python needs {reason} to name {version}"
        else:
            assert ".".join(map(str, inferred)) == version
    finally:
        node.stop()


def _inference_on_full_rows(version: str) -> tuple[int, ...]:
    from kafka.protocol.api_key import ApiKey
    from kafka.protocol.broker_version_data import infer_broker_version_from_api_versions

    return infer_broker_version_from_api_versions({ApiKey(k): v for k, v in RELEASES[version].items()})


@pytest.mark.peer
@pytest.mark.parametrize("version", [v for v, rows in RELEASES.items() if API_VERSIONS in rows])
def test_the_release_table_agrees_with_kafka_python(version):
    """On a real broker's full rows kafka-python names every release from 0.10.0 on: the table and
    its inference agree, so a wrong name above is ours."""
    assert ".".join(map(str, _inference_on_full_rows(version))) == version


# ---- versions a release does not serve ---------------------------------------------------------


async def _fate(host: str, port: int, api_key: int, version: int, body) -> str:
    async with await RawClient.connect(host, port) as client:
        reply = await client.request(api_key, version, body, timeout=10)
        return "closed" if reply.closed else "answered"


@pytest.mark.parametrize("version", ["4.0", "4.1", "4.3"])
def test_kafka_4_advertises_produce_v0_but_refuses_v0_to_v2(version, tmp_path):
    # ApiKeys.toApiVersion advertises PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION (0) for librdkafka's
    # sake (KAFKA-18659); ProduceRequest.json starts at v3, so RequestContext.parseRequest fails on
    # v0-2 and SocketServer closes the connection, as for any version the broker lacks. Fetch v0-3
    # left with KIP-896 in the same way.
    node = start_broker_process(tmp_path, kafka_version=version)
    try:
        advertised = asyncio.run(_advertised(node.host, node.port))
        assert advertised[0][0] == 0 and advertised[1][0] == 4
        produce = ProduceRequest(acks=1, timeout_ms=1000)
        for v in (0, 1, 2):
            assert asyncio.run(_fate(node.host, node.port, 0, v, produce)) == "closed"
        assert asyncio.run(_fate(node.host, node.port, 0, 3, produce)) == "answered"
        fetch = FetchRequest(max_wait_ms=0)
        assert asyncio.run(_fate(node.host, node.port, 1, 3, fetch)) == "closed"
        assert asyncio.run(_fate(node.host, node.port, 1, 4, fetch)) == "answered"
    finally:
        node.stop()


def test_kafka_3_serves_the_old_versions(tmp_path):
    node = start_broker_process(tmp_path, kafka_version="3.9")
    try:
        assert asyncio.run(_fate(node.host, node.port, 0, 0, ProduceRequest(acks=1))) == "answered"
        assert asyncio.run(_fate(node.host, node.port, 1, 0, FetchRequest(max_wait_ms=0))) == "answered"
        # 3.9 advertises Fetch up to v17: v18 is Kafka 4.1's and closes the connection here
        assert asyncio.run(_fate(node.host, node.port, 1, 18, FetchRequest(max_wait_ms=0))) == "closed"
    finally:
        node.stop()


def test_release_table_path_is_the_committed_extract():
    assert Path(DEFINITIONS_DIR / "api-versions.tsv").is_file()
    assert len(RELEASES) == 33
