"""The docker target up to the Docker SDK: a fake client records what the target asks of the engine
(no engine runs here), and the readiness logic runs on injected probes and clocks."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from docker import errors as docker_errors

from kconform.harness.targets import docker_target as dt
from kconform.harness.targets.base import TargetError
from kconform.harness.targets.docker_target import (
    DEFAULT_MATRIX,
    LABEL,
    DockerTarget,
    cleanup_stale,
    cluster_ready,
    node_specs,
    resolve_version,
    wait_until_ready,
)
from kconform.harness.targets.registry import make_target

ROOT = Path(__file__).resolve().parents[2]


# ---- a fake Docker client, shaped like the SDK's ------------------------------------------------


class FakeContainer:
    def __init__(self, engine, name, image, kwargs):
        self.engine, self.name, self.image, self.kwargs = engine, name, image, kwargs
        self.status = "running"
        self.removed = False
        self.attrs = {"Config": {"Labels": dict(kwargs.get("labels") or {})}, "State": {"ExitCode": 0}}

    def reload(self):
        if self.removed:
            raise docker_errors.NotFound(f"no container {self.name}")

    def logs(self, stdout=True, stderr=True):
        return f"log of {self.name}\n".encode()

    def pause(self):
        self.engine.calls.append(("pause", self.name))
        self.status = "paused"

    def unpause(self):
        self.engine.calls.append(("unpause", self.name))
        self.status = "running"

    def stop(self, timeout=10):
        self.status = "exited"

    def remove(self, force=False, v=False):
        if self.removed:
            raise docker_errors.NotFound(f"no container {self.name}")
        self.engine.calls.append(("remove", self.name, force, v))
        self.removed = True


class FakeNetwork:
    def __init__(self, engine, name, labels):
        self.engine, self.name = engine, name
        self.attrs = {"Labels": dict(labels or {})}
        self.removed = False

    def remove(self):
        if self.removed:
            raise docker_errors.NotFound(f"no network {self.name}")
        self.engine.calls.append(("network.remove", self.name))
        self.removed = True


def _matches(obj, filters):
    label = (filters or {}).get("label")
    labels = obj.attrs.get("Labels") or obj.attrs.get("Config", {}).get("Labels") or {}
    return label is None or label in labels


class FakeImages:
    def __init__(self, engine, present):
        self.engine, self.present = engine, set(present)
        self.pull_error = None

    def get(self, name):
        self.engine.calls.append(("images.get", name))
        if name not in self.present:
            raise docker_errors.ImageNotFound(f"no such image {name}")
        return object()

    def pull(self, repository, tag=None, **kw):
        self.engine.calls.append(("images.pull", repository, tag))
        if self.pull_error:
            raise self.pull_error
        self.present.add(f"{repository}:{tag}")
        return object()


class FakeContainers:
    def __init__(self, engine):
        self.engine = engine
        self.all: list[FakeContainer] = []

    def run(self, image, **kwargs):
        self.engine.calls.append(("containers.run", kwargs["name"]))
        container = FakeContainer(self.engine, kwargs["name"], image, kwargs)
        if self.engine.on_run:
            self.engine.on_run(container)
        self.all.append(container)
        return container

    def list(self, all=False, filters=None):
        return [c for c in self.all if not c.removed and _matches(c, filters)]

    def get(self, name):
        for c in self.all:
            if c.name == name and not c.removed:
                return c
        raise docker_errors.NotFound(name)


class FakeNetworks:
    def __init__(self, engine):
        self.engine = engine
        self.all: list[FakeNetwork] = []

    def create(self, name, driver=None, labels=None, **kw):
        self.engine.calls.append(("networks.create", name, driver))
        network = FakeNetwork(self.engine, name, labels)
        self.all.append(network)
        return network

    def list(self, filters=None, **kw):
        return [n for n in self.all if not n.removed and _matches(n, filters)]


class FakeDocker:
    def __init__(self, images=(f"apache/kafka:{DEFAULT_MATRIX[3]}",)):
        self.calls: list[tuple] = []
        self.on_run = None
        self.images = FakeImages(self, images)
        self.containers = FakeContainers(self)
        self.networks = FakeNetworks(self)

    def live(self):
        return [c for c in self.containers.all if not c.removed]


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def ports(n):
    return [41000 + i for i in range(n)]


def make(client, brokers=1, version=None, readiness=lambda addrs: None, **kw):
    clock = FakeClock()
    return DockerTarget(
        version=version,
        brokers=brokers,
        client=client,
        ports=ports,
        readiness=readiness,
        clock=clock,
        sleep=clock.sleep,
        **kw,
    )


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


# ---- start and stop through the fake engine -----------------------------------------------------


def test_single_broker_start_runs_one_labelled_container_without_a_network():
    client = FakeDocker()
    target = make(client)
    target.start()
    [container] = client.live()
    kwargs = container.kwargs
    assert container.image == "apache/kafka:4.0.1"
    assert kwargs["ports"] == {"9092/tcp": ("127.0.0.1", 41000)}
    assert kwargs["labels"][LABEL] == target.run_id
    assert kwargs["detach"] is True and kwargs["hostname"] == kwargs["name"]
    assert "network" not in kwargs and client.networks.all == []
    assert ("images.pull", "apache/kafka", "4.0.1") not in client.calls
    assert target.bootstrap == "127.0.0.1:41000"
    assert target.describe() == {
        "kind": "docker",
        "name": "docker",
        "bootstrap": "127.0.0.1:41000",
        "image": "apache/kafka:4.0.1",
        "version": "4.0.1",
        "brokers": 1,
        "run_id": target.run_id,
    }
    target.stop()
    assert client.live() == []


def test_cluster_start_creates_a_labelled_network_and_publishes_broker_ports():
    client = FakeDocker(images=["apache/kafka:3.9.1"])
    target = make(client, brokers=3, version="3.9")
    target.start()
    [network] = client.networks.all
    assert network.attrs["Labels"] == {LABEL: target.run_id}
    assert ("networks.create", network.name, "bridge") in client.calls
    containers = client.live()
    assert [c.kwargs["labels"]["kconform.node-id"] for c in containers] == ["100", "1", "2", "3"]
    assert all(c.kwargs["network"] == network.name for c in containers)
    assert all(c.kwargs["labels"][LABEL] == target.run_id for c in containers)
    assert "ports" not in containers[0].kwargs  # the controller is reached only inside the network
    assert [c.kwargs["ports"]["9092/tcp"] for c in containers[1:]] == [("127.0.0.1", p) for p in ports(3)]
    for c in containers[1:]:
        port = c.kwargs["ports"]["9092/tcp"][1]
        assert c.kwargs["environment"]["KAFKA_ADVERTISED_LISTENERS"].endswith(f"EXTERNAL://127.0.0.1:{port}")
    assert target.bootstrap == "127.0.0.1:41000,127.0.0.1:41001,127.0.0.1:41002"
    target.stop()
    assert client.live() == [] and network.removed
    assert [c[1] for c in client.calls if c[0] == "remove"] == [c.name for c in reversed(containers)]


def test_missing_image_is_pulled_and_a_failed_pull_is_a_clear_error():
    client = FakeDocker(images=[])
    target = make(client, version="3.8")
    target.start()
    assert ("images.pull", "apache/kafka", "3.8.1") in client.calls
    target.stop()

    client = FakeDocker(images=[])
    client.images.pull_error = docker_errors.APIError("manifest for apache/kafka:9.9.9 not found")
    target = make(client, version="9.9.9")
    with pytest.raises(TargetError, match=r"could not pull apache/kafka:9\.9\.9: .*manifest"):
        target.start()
    assert client.live() == [] and not any(c[0] == "containers.run" for c in client.calls)


def test_a_container_that_exits_keeps_its_logs_and_everything_is_removed(tmp_path):
    client = FakeDocker()

    def exit_broker_2(container):
        if container.name.endswith("kafka-2"):
            container.status = "exited"
            container.attrs["State"]["ExitCode"] = 1

    client.on_run = exit_broker_2
    target = make(client, brokers=2, logs_dir=tmp_path / "logs", readiness=lambda addrs: "not yet")
    with pytest.raises(TargetError) as info:
        target.start()
    message = str(info.value)
    assert "kafka-2 (node 2) exited with code 1" in message and str(tmp_path / "logs") in message
    saved = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert saved == sorted(f"{c.name}.log" for c in client.containers.all)
    assert (tmp_path / "logs" / saved[0]).read_text().startswith("log of ")
    assert client.live() == [] and all(n.removed for n in client.networks.all)


def test_docker_refusing_a_container_keeps_logs_and_cleans_up(tmp_path):
    client = FakeDocker()
    started = []

    def refuse_second(container):
        started.append(container)
        if len(started) == 2:
            raise docker_errors.APIError("port is already allocated")

    client.on_run = refuse_second
    target = make(client, brokers=2, logs_dir=tmp_path)
    with pytest.raises(TargetError, match=r"Docker refused .*port is already allocated.*logs in"):
        target.start()
    assert (tmp_path / f"{started[0].name}.log").exists()
    assert client.live() == [] and all(n.removed for n in client.networks.all)


def test_health_timeout_keeps_logs_and_cleans_up(tmp_path):
    client = FakeDocker()
    polls = []

    def never_ready(addresses):
        polls.append(dict(addresses))
        return "broker 1 does not answer ApiVersions yet"

    target = make(client, brokers=1, logs_dir=tmp_path, readiness=never_ready, startup_timeout=10)
    with pytest.raises(TargetError, match=r"not ready after 10 s: broker 1 does not answer.*logs in"):
        target.start()
    assert polls[0] == {1: "127.0.0.1:41000"} and 10 <= len(polls) <= 12  # one poll a (fake) second
    assert [p.name for p in tmp_path.iterdir()] == [f"{client.containers.all[0].name}.log"]
    assert client.live() == []


def test_stop_is_idempotent_and_tolerates_containers_already_gone():
    client = FakeDocker()
    target = make(client, brokers=2)
    target.stop()  # never started
    target.start()
    client.containers.all[1].remove(force=True)  # removed behind our back
    client.networks.all[0].remove()
    target.stop()
    target.stop()
    assert client.live() == []
    with pytest.raises(TargetError, match="not started"):
        target.bootstrap  # noqa: B018


def test_faults_pause_and_unpause_broker_containers():
    client = FakeDocker()
    target = make(client, brokers=3)
    target.start()
    target.faults.broker_down(2)
    broker_2 = client.containers.get(f"kconform-{target.run_id}-kafka-2")
    assert broker_2.status == "paused" and ("pause", broker_2.name) in client.calls
    target.faults.broker_up(2)
    assert broker_2.status == "running"
    with pytest.raises(TargetError, match=r"no running broker 100"):
        target.faults.broker_down(100)  # the controller is not a broker
    target.stop()


def test_cleanup_stale_removes_only_labelled_things():
    client = FakeDocker()
    mine = client.containers.run("apache/kafka:4.0.1", name="old", labels={LABEL: "aaa"})
    other_run = client.containers.run("apache/kafka:4.0.1", name="other", labels={LABEL: "bbb"})
    foreign = client.containers.run("postgres", name="db", labels={"app": "x"})
    unlabelled = client.containers.run("redis", name="cache")
    net = client.networks.create("kconform-aaa", labels={LABEL: "aaa"})
    foreign_net = client.networks.create("corp", labels={})
    assert sorted(cleanup_stale(client, run_ids=["aaa"])) == ["kconform-aaa", "old"]
    assert mine.removed and net.removed and not other_run.removed
    assert cleanup_stale(client) == ["other"]
    assert not foreign.removed and not unlabelled.removed and not foreign_net.removed


# ---- readiness ----------------------------------------------------------------------------------


def test_cluster_ready_wants_every_api_versions_answer_and_every_broker_in_metadata():
    addresses = {1: "127.0.0.1:1", 2: "127.0.0.1:2", 3: "127.0.0.1:3"}
    down = {"127.0.0.1:2"}
    listed = {1, 2}

    async def versions(address, timeout):
        if address in down:
            raise TargetError(f"no Kafka-protocol answer at {address}")
        return {18: (0, 3)}

    async def ids(address, timeout):
        return set(listed)

    def ready():
        return asyncio.run(cluster_ready(addresses, fetch_versions=versions, fetch_ids=ids))

    assert "broker 2 at 127.0.0.1:2 does not answer ApiVersions" in ready()
    down.clear()
    assert ready() == "Metadata lists brokers [1, 2], still missing [3]"
    listed.add(3)
    assert ready() is None


def test_wait_until_ready_polls_until_ready_and_stops_early_when_a_node_dies():
    clock = FakeClock()
    answers = iter(["starting", "starting", None])
    wait_until_ready({1: "a"}, timeout=120, check=lambda a: next(answers), clock=clock, sleep=clock.sleep)
    assert clock.now == 2.0
    with pytest.raises(TargetError, match="exited"):
        wait_until_ready(
            {1: "a"},
            timeout=120,
            check=lambda a: "starting",
            alive=lambda: "node 1 exited",
            clock=clock,
            sleep=clock.sleep,
        )


# ---- no engine ----------------------------------------------------------------------------------


def test_no_docker_engine_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    target = DockerTarget(version="4.0")
    with pytest.raises(TargetError) as info:
        target.start()
    message = str(info.value)
    assert "needs a running Docker engine" in message and "DOCKER_HOST" in message
    assert f"unix://{tmp_path}/no-docker.sock" in message


# ---- the CI workflow ----------------------------------------------------------------------------


def test_matrix_workflow_parses_and_names_every_version():
    try:
        import yaml
    except ModuleNotFoundError as exc:  # a declared test dependency: missing is a broken install
        pytest.fail(f"{exc}: PyYAML is in the [dev] extra, pip install -e '.[dev]'", pytrace=False)
    text = (ROOT / "ci" / "workflows" / "kafka-matrix.yml").read_text()
    workflow = yaml.safe_load(text)
    [job] = workflow["jobs"].values()
    assert [str(v) for v in job["strategy"]["matrix"]["kafka"]] == list(DEFAULT_MATRIX)
    commands = "\n".join(step.get("run", "") for step in job["steps"])
    assert "--kafka-target docker:${{ matrix.kafka }}" in commands
    assert "ci/docker-smoke.py" in commands


def test_logs_dir_defaults_to_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("KCONFORM_DOCKER_LOGS", str(tmp_path / "ci-logs"))
    client = FakeDocker()
    target = make(client, readiness=lambda addrs: "not yet", startup_timeout=1)
    with pytest.raises(TargetError, match="ci-logs"):
        target.start()
    assert len(list((tmp_path / "ci-logs").iterdir())) == 1


def test_smoke_script_fails_cleanly_without_an_engine(monkeypatch, tmp_path, capsys):
    import importlib.util

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    spec = importlib.util.spec_from_file_location("docker_smoke", ROOT / "ci" / "docker-smoke.py")
    smoke = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smoke)
    assert smoke.main(["4.0"]) == 1
    assert "needs a running Docker engine" in capsys.readouterr().err


@pytest.mark.peer
def test_readiness_probes_speak_to_a_real_cluster():
    """The default probes over real sockets, against librdkafka's mock cluster (three brokers)."""
    from kconform.harness.targets.rdkafka_mock import RdkafkaMockCluster

    with RdkafkaMockCluster(brokers=3) as mock:
        addresses = dict(enumerate(mock.bootstrap.split(","), start=1))
        assert asyncio.run(dt.fetch_broker_ids(addresses[1])) == {1, 2, 3}
        assert asyncio.run(cluster_ready(addresses)) is None
        assert "still missing [4]" in asyncio.run(cluster_ready({**addresses, 4: addresses[1]}))


@pytest.mark.peer
def test_smoke_script_round_trip_against_a_real_cluster():
    """The smoke script's produce (kconform's producer) and consume (librdkafka) halves, on the mock."""
    import importlib.util

    from kconform.harness.targets.rdkafka_mock import RdkafkaMockCluster

    spec = importlib.util.spec_from_file_location("docker_smoke", ROOT / "ci" / "docker-smoke.py")
    smoke = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smoke)
    with RdkafkaMockCluster(brokers=1) as mock:
        mock.create_topic("kconform-smoke", 1, 1)
        values = [b"v%d" % i for i in range(5)]
        asyncio.run(smoke.produce(mock.bootstrap, "kconform-smoke", values))
        assert smoke.consume(mock.bootstrap, "kconform-smoke", len(values), timeout=20) == values
