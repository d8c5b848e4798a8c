"""What the docker target's containers are, decided without Docker: the ``apache/kafka`` image tag for a
Kafka version, and each node's KRaft roles, name, published port and environment.

Layout. One broker is a single combined node (broker and controller). N > 1 brokers are one dedicated
controller plus N broker-only nodes on a bridge network of their own, so taking a broker down never
costs the controller quorum. Every node listens on three listeners: CONTROLLER (:9093, inside the
network), INTERNAL (:19092, advertised as the container's name, for inter-broker traffic) and EXTERNAL
(:9092, published on 127.0.0.1 at a port chosen here, so it can be advertised to clients as is)."""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from .base import TargetError

__all__ = [
    "CONTROLLER_NODE_ID",
    "CONTROLLER_PORT",
    "DEFAULT_HEAP",
    "DEFAULT_MATRIX",
    "DEFAULT_VERSION",
    "EXTERNAL_PORT",
    "IMAGE_REPOSITORY",
    "INTERNAL_PORT",
    "MINIMUM_VERSION",
    "VERSION_TAGS",
    "NodeSpec",
    "new_cluster_id",
    "node_specs",
    "resolve_version",
]

IMAGE_REPOSITORY = "apache/kafka"

# Short Kafka versions and the newest patch release of each published as apache/kafka:<tag> (Kafka's
# docs, getting-started/docker for each line). Images exist from 3.7.0 on; full tags pass through as is.
VERSION_TAGS: dict[str, str] = {
    "3.7": "3.7.2",
    "3.8": "3.8.1",
    "3.9": "3.9.1",
    "4.0": "4.0.1",
    "4.1": "4.1.1",
}
DEFAULT_VERSION = "4.0"
DEFAULT_MATRIX: tuple[str, ...] = tuple(VERSION_TAGS[v] for v in ("3.7", "3.8", "3.9", "4.0", "4.1"))

EXTERNAL_PORT = 9092  # inside the container, published on 127.0.0.1
INTERNAL_PORT = 19092
CONTROLLER_PORT = 9093
CONTROLLER_NODE_ID = 100  # the dedicated controller of a multi-broker cluster; brokers are 1..N
DEFAULT_HEAP = "-Xmx512m -Xms256m"
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_SHORT = re.compile(r"\d+\.\d+")
_RELEASE = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?")  # a Kafka release number, short or full
MINIMUM_VERSION = (3, 7)  # the first apache/kafka image (KRaft from 3.3, but no image before 3.7)


def resolve_version(version: str | None) -> str:
    """The image tag for a Kafka version: ``3.9`` -> ``3.9.1``; ``3.9.0``, ``latest`` unchanged. A release
    older than ``MINIMUM_VERSION`` is refused: it has no apache/kafka image (and before 3.3 no KRaft)."""
    version = (version or DEFAULT_VERSION).strip()
    release = _RELEASE.fullmatch(version)
    if release and (int(release[1]), int(release[2])) < MINIMUM_VERSION:
        minimum = ".".join(map(str, MINIMUM_VERSION))
        raise TargetError(
            f"docker target: Kafka {version} is older than {minimum}, the first release with an apache/kafka "
            "image; the docker target runs KRaft only (production-ready from 3.3; ZooKeeper-mode releases "
            f"are not supported). Use {minimum} or newer, e.g. {DEFAULT_VERSION}."
        )
    if version in VERSION_TAGS:
        return VERSION_TAGS[version]
    if _SHORT.fullmatch(version):
        return f"{version}.0"  # a line newer than this table: its first release
    if not _TAG.fullmatch(version):
        raise TargetError(f"docker target: {version!r} is not a Kafka version or image tag (e.g. 4.0, 3.9.1)")
    return version


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One container: its node id, KRaft roles, name, published host port (None: not published) and
    environment."""

    node_id: int
    roles: str
    name: str
    host_port: int | None
    environment: dict[str, str]

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles.split(",")


def node_specs(
    run_id: str,
    brokers: int,
    host_ports: list[int],
    *,
    cluster_id: str,
    heap: str = DEFAULT_HEAP,
    extra_env: dict[str, str] | None = None,
    external_protocol: str = "PLAINTEXT",
) -> list[NodeSpec]:
    """The containers of a cluster, in start order (controller first). Pure: no Docker involved.
    ``external_protocol`` is the security protocol of the clients' listener (``client_listener``)."""
    if brokers < 1:
        raise TargetError(f"docker target: the broker count must be at least 1, not {brokers}")
    if len(host_ports) != brokers:
        raise TargetError(f"docker target: {brokers} brokers need as many host ports, got {len(host_ports)}")
    # Every setting below is one Apache Kafka documents for the apache/kafka image in KRaft mode (its
    # docker/examples/docker-compose-files/{single-node,cluster/isolated}/plaintext/docker-compose.yml and
    # the image's own test fixtures docker/test/fixtures/mode/{combined,isolated}/docker-compose.yml), with
    # these choices of ours: listener names INTERNAL/EXTERNAL for the examples' PLAINTEXT/PLAINTEXT_HOST,
    # one controller (node 100) for the examples' three, and the internal topics' replication factors at
    # Kafka's defaults (3; min ISR 2) capped by the broker count, where the examples use 1 throughout.
    replication = str(min(3, brokers))
    min_isr = str(min(2, int(replication)))
    common = {
        "CLUSTER_ID": cluster_id,
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LOG_DIRS": "/tmp/kraft-combined-logs",
        # Read by kafka-server-start.sh (default 1 GiB). The image's wrapper skips it when turning KAFKA_*
        # into properties; 3.7.0's skip list misspells it, so that image only warns of an unknown
        # "heap.opts" property.
        "KAFKA_HEAP_OPTS": heap,
    }
    protocols = f"CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:{external_protocol}"
    broker_env = {
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": protocols,
        "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": replication,
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": replication,
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": min_isr,
        # KIP-932's share-group state topic (Kafka 4.x examples set it; older brokers ignore the names)
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR": replication,
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR": min_isr,
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "1000",
    }

    def name(node_id: int, role: str) -> str:
        return f"kconform-{run_id}-{role}-{node_id}"

    def broker(node_id: int, port: int, roles: str, voters: str) -> NodeSpec:
        host = name(node_id, "kafka")
        listeners = f"INTERNAL://:{INTERNAL_PORT},EXTERNAL://:{EXTERNAL_PORT}"
        if "controller" in roles:
            listeners = f"CONTROLLER://:{CONTROLLER_PORT}," + listeners
        env = {
            **common,
            **broker_env,
            "KAFKA_NODE_ID": str(node_id),
            "KAFKA_PROCESS_ROLES": roles,
            "KAFKA_CONTROLLER_QUORUM_VOTERS": voters,
            "KAFKA_LISTENERS": listeners,
            "KAFKA_ADVERTISED_LISTENERS": f"INTERNAL://{host}:{INTERNAL_PORT},EXTERNAL://127.0.0.1:{port}",
            **(extra_env or {}),
        }
        return NodeSpec(node_id, roles, host, port, env)

    if brokers == 1:
        host = name(1, "kafka")
        return [broker(1, host_ports[0], "broker,controller", f"1@{host}:{CONTROLLER_PORT}")]
    controller = name(CONTROLLER_NODE_ID, "controller")
    voters = f"{CONTROLLER_NODE_ID}@{controller}:{CONTROLLER_PORT}"
    controller_env = {
        **common,
        "KAFKA_NODE_ID": str(CONTROLLER_NODE_ID),
        "KAFKA_PROCESS_ROLES": "controller",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": voters,
        "KAFKA_LISTENERS": f"CONTROLLER://:{CONTROLLER_PORT}",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT",
        **(extra_env or {}),
    }
    specs = [NodeSpec(CONTROLLER_NODE_ID, "controller", controller, None, controller_env)]
    specs += [broker(i, host_ports[i - 1], "broker", voters) for i in range(1, brokers + 1)]
    return specs


# Uuid.ZERO_UUID and Uuid.METADATA_TOPIC_ID (ONE_UUID): Uuid.RESERVED, never returned by randomUuid
_RESERVED_UUIDS = frozenset({bytes(16), (1).to_bytes(16, "big")})


def new_cluster_id(random_bytes: Callable[[], bytes] = lambda: uuid.uuid4().bytes) -> str:
    """A KRaft cluster id as ``kafka-storage random-uuid`` makes one (Kafka's ``Uuid.randomUuid``): 16
    random bytes, URL-safe base64 without padding, drawn again while the id is reserved or starts with
    "-" (which a command line would take for an option)."""
    while True:
        raw = random_bytes()
        text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
        if raw not in _RESERVED_UUIDS and not text.startswith("-"):
            return text
