"""The docker target's plan, before any engine: versions and published tags, the version matrix, the
registry's docker specs, and what each container gets (every setting a Kafka property the image wrapper
writes, replication factors, cluster ids)."""

from __future__ import annotations

import pytest

from kconform.harness.targets import docker_target as dt
from kconform.harness.targets.base import TargetError
from kconform.harness.targets.docker_target import (
    DEFAULT_MATRIX,
    DockerTarget,
    node_specs,
    resolve_version,
)
from kconform.harness.targets.registry import make_target

from ..support.fake_docker import ports

# ---- versions -----------------------------------------------------------------------------------


def test_short_versions_map_to_published_tags_and_full_tags_pass_through():
    assert resolve_version("3.7") == "3.7.2"
    assert resolve_version("3.9") == "3.9.1"
    assert resolve_version(None) == resolve_version("4.0") == "4.0.1"
    assert resolve_version("3.9.0") == "3.9.0"
    assert resolve_version("latest") == "latest"
    assert resolve_version("4.7") == "4.7.0"  # a line newer than the table: its first release
    with pytest.raises(TargetError, match="not a Kafka version"):
        resolve_version("4.0 ; rm")


def test_matrix_is_every_line_from_3_7_with_an_image():
    assert DEFAULT_MATRIX == ("3.7.2", "3.8.1", "3.9.1", "4.0.1", "4.1.1")
    assert all(resolve_version(v) == v for v in DEFAULT_MATRIX)


def test_registry_parses_docker_specs():
    target = make_target("docker:3.9:3")
    assert isinstance(target, DockerTarget)
    assert (target.name, target.version, target.brokers, target.image) == (
        "docker:3.9:3",
        "3.9.1",
        3,
        "apache/kafka:3.9.1",
    )
    plain = make_target("docker")
    assert (plain.version, plain.brokers) == ("4.0.1", 1)
    assert make_target("docker:3.8.0").image == "apache/kafka:3.8.0"
    with pytest.raises(TargetError, match="positive number"):
        make_target("docker:4.0:zero")


# ---- what each container gets -------------------------------------------------------------------


# Where each expected setting comes from, in Apache Kafka's repository (apache/kafka):
SINGLE = "docker/examples/docker-compose-files/single-node/plaintext/docker-compose.yml"


ISOLATED = "docker/examples/docker-compose-files/cluster/isolated/plaintext/docker-compose.yml"


FIXTURE = "docker/test/fixtures/mode/isolated/docker-compose.yml"  # the image's own sanity test


WRAPPER = "core/src/main/scala/kafka/docker/KafkaDockerWrapper.scala"  # KAFKA_* env -> server.properties


def test_single_broker_is_one_combined_node():
    [spec] = node_specs("r1", 1, [40001], cluster_id="CID")
    name = "kconform-r1-kafka-1"
    assert (spec.node_id, spec.roles, spec.name, spec.host_port) == (1, "broker,controller", name, 40001)
    assert spec.environment == {
        # SINGLE: CLUSTER_ID '4L6g3nShT-eMCtK--X86sw' (any id kafka-storage random-uuid makes)
        "CLUSTER_ID": "CID",
        # SINGLE: KAFKA_NODE_ID 1
        "KAFKA_NODE_ID": "1",
        # SINGLE: KAFKA_PROCESS_ROLES 'broker,controller'
        "KAFKA_PROCESS_ROLES": "broker,controller",
        # SINGLE: KAFKA_CONTROLLER_QUORUM_VOTERS '1@broker:29093' (the container's hostname; our port 9093
        # is ISOLATED's controller port)
        "KAFKA_CONTROLLER_QUORUM_VOTERS": f"1@{name}:9093",
        # SINGLE: KAFKA_CONTROLLER_LISTENER_NAMES 'CONTROLLER'
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        # SINGLE: KAFKA_LISTENERS 'CONTROLLER://:29093,PLAINTEXT_HOST://:9092,PLAINTEXT://:19092'
        # (INTERNAL and EXTERNAL are our names for PLAINTEXT and PLAINTEXT_HOST)
        "KAFKA_LISTENERS": "CONTROLLER://:9093,INTERNAL://:19092,EXTERNAL://:9092",
        # SINGLE: KAFKA_ADVERTISED_LISTENERS 'PLAINTEXT_HOST://localhost:9092,PLAINTEXT://broker:19092'
        # (the host side advertises the port published on 127.0.0.1)
        "KAFKA_ADVERTISED_LISTENERS": f"INTERNAL://{name}:19092,EXTERNAL://127.0.0.1:40001",
        # SINGLE: KAFKA_LISTENER_SECURITY_PROTOCOL_MAP 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,
        # PLAINTEXT_HOST:PLAINTEXT'
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        # SINGLE: KAFKA_INTER_BROKER_LISTENER_NAME 'PLAINTEXT'
        "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
        # SINGLE: KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR 1
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        # SINGLE: KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR 1
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        # SINGLE: KAFKA_TRANSACTION_STATE_LOG_MIN_ISR 1
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        # SINGLE (Kafka 4.x): KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR 1
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR": "1",
        # SINGLE (Kafka 4.x): KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR 1
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR": "1",
        # SINGLE: KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS 0
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "1000",
        # SINGLE: KAFKA_LOG_DIRS '/tmp/kraft-combined-logs'
        "KAFKA_LOG_DIRS": "/tmp/kraft-combined-logs",
        # WRAPPER: ExcludeServerPropsEnv keeps KAFKA_HEAP_OPTS out of server.properties (3.7.1 on);
        # bin/kafka-server-start.sh reads it (default -Xmx1G -Xms1G)
        "KAFKA_HEAP_OPTS": dt.DEFAULT_HEAP,
    }


def test_three_brokers_are_a_controller_and_three_broker_nodes():
    specs = node_specs("r3", 3, [40001, 40002, 40003], cluster_id="CID")
    controller, *brokers = specs
    # ISOLATED: KAFKA_CONTROLLER_QUORUM_VOTERS '1@controller-1:9093,2@controller-2:9093,3@controller-3:9093'
    # (one controller here, node 100, so broker ids start at 1)
    voters = "100@kconform-r3-controller-100:9093"
    assert (controller.node_id, controller.roles, controller.host_port) == (100, "controller", None)
    assert controller.environment == {
        "CLUSTER_ID": "CID",  # ISOLATED: CLUSTER_ID, the same on every node
        "KAFKA_NODE_ID": "100",  # ISOLATED: KAFKA_NODE_ID, one per node
        "KAFKA_PROCESS_ROLES": "controller",  # ISOLATED: KAFKA_PROCESS_ROLES 'controller'
        "KAFKA_CONTROLLER_QUORUM_VOTERS": voters,
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",  # ISOLATED: 'CONTROLLER'
        "KAFKA_LISTENERS": "CONTROLLER://:9093",  # ISOLATED: KAFKA_LISTENERS 'CONTROLLER://:9093'
        # FIXTURE: KAFKA_LISTENER_SECURITY_PROTOCOL_MAP 'CONTROLLER:PLAINTEXT' (ISOLATED leaves it out;
        # KafkaConfig.effectiveListenerSecurityProtocolMap then maps controller listeners to PLAINTEXT)
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT",
        "KAFKA_LOG_DIRS": "/tmp/kraft-combined-logs",  # ISOLATED: KAFKA_LOG_DIRS
        "KAFKA_HEAP_OPTS": dt.DEFAULT_HEAP,  # WRAPPER: not a server property
    }
    # docker/resources/common-scripts/configure: "KAFKA_ADVERTISED_LISTENERS is not supported on a KRaft
    # controller." (the container exits)
    assert "KAFKA_ADVERTISED_LISTENERS" not in controller.environment
    assert [b.node_id for b in brokers] == [1, 2, 3]
    for broker, port in zip(brokers, [40001, 40002, 40003], strict=True):
        env = broker.environment
        assert broker.roles == env["KAFKA_PROCESS_ROLES"] == "broker"  # ISOLATED: 'broker'
        assert env["KAFKA_NODE_ID"] == str(broker.node_id)
        assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == voters  # ISOLATED: the same voters on brokers
        assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] == "CONTROLLER"  # ISOLATED: on brokers too
        # ISOLATED: KAFKA_LISTENERS 'PLAINTEXT://:19092,PLAINTEXT_HOST://:9092'
        assert env["KAFKA_LISTENERS"] == "INTERNAL://:19092,EXTERNAL://:9092"
        # ISOLATED: KAFKA_ADVERTISED_LISTENERS 'PLAINTEXT://kafka-1:19092,PLAINTEXT_HOST://localhost:29092'
        assert env["KAFKA_ADVERTISED_LISTENERS"] == (
            f"INTERNAL://kconform-r3-kafka-{broker.node_id}:19092,EXTERNAL://127.0.0.1:{port}"
        )
        # ISOLATED: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT'
        assert env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"] == (
            "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"
        )
        assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] == "INTERNAL"  # ISOLATED: 'PLAINTEXT'
        # ISOLATED sets 1 for these; three brokers take Kafka's defaults (replication factor 3, min ISR 2:
        # offsets.topic.replication.factor, transaction.state.log.*, share.coordinator.state.topic.*)
        assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "3"
        assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "3"
        assert env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"] == "2"
        assert env["KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR"] == "3"
        assert env["KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR"] == "2"
        assert env["KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS"] == "0"  # ISOLATED: 0
        assert env["KAFKA_LOG_DIRS"] == "/tmp/kraft-combined-logs"  # ISOLATED
        assert env["CLUSTER_ID"] == "CID"


def test_every_setting_is_a_kafka_property_the_image_wrapper_writes():
    """WRAPPER turns KAFKA_FOO_BAR into foo.bar (``__`` -> ``_``, ``___`` -> ``-``) except for its
    ExcludeServerPropsEnv; our names must all come out as the properties Kafka's docs name."""
    properties = {
        "KAFKA_NODE_ID": "node.id",
        "KAFKA_PROCESS_ROLES": "process.roles",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "controller.quorum.voters",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "controller.listener.names",
        "KAFKA_LISTENERS": "listeners",
        "KAFKA_ADVERTISED_LISTENERS": "advertised.listeners",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "listener.security.protocol.map",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "inter.broker.listener.name",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "offsets.topic.replication.factor",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "transaction.state.log.replication.factor",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "transaction.state.log.min.isr",
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR": (
            "share.coordinator.state.topic.replication.factor"
        ),
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR": "share.coordinator.state.topic.min.isr",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "group.initial.rebalance.delay.ms",
        "KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "group.min.session.timeout.ms",
        "KAFKA_LOG_DIRS": "log.dirs",
    }
    not_properties = {"CLUSTER_ID", "KAFKA_HEAP_OPTS"}  # read by the image's scripts, not by KafkaConfig

    def wrapper_property(key: str) -> str:  # WRAPPER's getServerConfigsFromEnv
        return key.replace("KAFKA_", "").lower().replace("_", ".").replace("...", "-").replace("..", "_")

    used = set()
    for spec in node_specs("r", 1, [1], cluster_id="C") + node_specs("r", 3, [1, 2, 3], cluster_id="C"):
        used |= set(spec.environment)
    assert used == set(properties) | not_properties
    assert {key: wrapper_property(key) for key in properties} == properties


def test_replication_factors_are_capped_at_three():
    specs = node_specs("r5", 5, ports(5), cluster_id="C")
    assert {s.environment["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] for s in specs[1:]} == {"3"}
    two = node_specs("r2", 2, ports(2), cluster_id="C")
    assert {s.environment["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] for s in two[1:]} == {"2"}


def test_cluster_id_looks_like_kafkas():
    cid = dt.new_cluster_id()
    assert len(cid) == 22 and "=" not in cid and cid != dt.new_cluster_id()


def test_cluster_id_is_never_reserved_nor_starts_with_a_dash():
    """Kafka's Uuid.randomUuid (clients/.../common/Uuid.java) draws again while the id is in Uuid.RESERVED
    (ZERO_UUID, METADATA_TOPIC_ID) or its string starts with "-"."""
    draws = iter([bytes(16), (1).to_bytes(16, "big"), b"\xf8" + bytes(15), b"\x01" * 16])
    assert dt.new_cluster_id(lambda: next(draws)) == "AQEBAQEBAQEBAQEBAQEBAQ"
    assert next(draws, None) is None  # the zero id, the metadata topic id and "-AAA..." were refused
