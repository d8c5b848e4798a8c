"""The ``docker`` target: Apache Kafka's own ``apache/kafka`` image, in KRaft mode, through the Docker SDK.

    with DockerTarget(version="3.9", brokers=3) as target:
        target.bootstrap        # "127.0.0.1:40123,127.0.0.1:40124,127.0.0.1:40125"

Layout. One broker is a single combined node (broker and controller). N > 1 brokers are one dedicated
controller plus N broker-only nodes on a bridge network of their own, so taking a broker down never
costs the controller quorum. Every node listens on three listeners: CONTROLLER (:9093, inside the
network), INTERNAL (:19092, advertised as the container's name, for inter-broker traffic) and EXTERNAL
(:9092, published on 127.0.0.1 at a port chosen here, so it can be advertised to clients as is).

Everything the target creates carries the label ``kconform.target=<run id>``; ``cleanup_stale`` removes
what an interrupted run left behind. Startup waits until every broker answers ApiVersions and Metadata
lists every broker; when it does not, the containers' logs are written to a directory named in the error
(``logs_dir``, else $KCONFORM_DOCKER_LOGS, else a new temporary directory) and everything is removed."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker import errors as docker_errors

from .base import FaultHooks, Target, TargetError, fetch_api_versions

__all__ = [
    "DEFAULT_MATRIX",
    "DEFAULT_VERSION",
    "IMAGE_REPOSITORY",
    "LABEL",
    "DockerTarget",
    "NodeSpec",
    "cleanup_stale",
    "node_specs",
    "resolve_version",
    "wait_until_ready",
]

IMAGE_REPOSITORY = "apache/kafka"
LABEL = "kconform.target"

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


def resolve_version(version: str | None) -> str:
    """The image tag for a Kafka version: ``3.9`` -> ``3.9.1``; ``3.9.0``, ``latest`` unchanged."""
    version = (version or DEFAULT_VERSION).strip()
    if version in VERSION_TAGS:
        return VERSION_TAGS[version]
    if _SHORT.fullmatch(version):
        return f"{version}.0"  # a line newer than this table: its first release
    if not _TAG.fullmatch(version):
        raise TargetError(f"docker target: {version!r} is not a Kafka version or image tag (e.g. 4.0, 3.9.1)")
    return version


# ---- what each container gets -------------------------------------------------------------------


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
) -> list[NodeSpec]:
    """The containers of a cluster, in start order (controller first). Pure: no Docker involved."""
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
    broker_env = {
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": replication,
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": replication,
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": min_isr,
        # KIP-932's share-group state topic (Kafka 4.x examples set it; older brokers ignore the names)
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR": replication,
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR": min_isr,
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
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


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 right now (held open together so they differ)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


# ---- readiness ----------------------------------------------------------------------------------


async def fetch_broker_ids(address: str, timeout: float = 10.0) -> set[int]:
    """The node ids a broker's Metadata answer lists."""
    from kconform.codecs.messages import MetadataRequest

    from ..client.connection import BrokerConnection
    from ..client.errors import ClientError
    from ..client.network import parse_bootstrap

    host, port = parse_bootstrap(address)[0]
    try:
        conn = await BrokerConnection.connect(host, port, connect_timeout=timeout, request_timeout=timeout)
    except ClientError as exc:
        raise TargetError(f"no Kafka-protocol answer at {address}: {exc}") from exc
    try:
        version = conn.version_for(3)
        request = MetadataRequest(topics=[], allow_auto_topic_creation=False)  # brokers only (v0: all topics)
        response = await conn.send(3, request, version=version)
        return {b.node_id for b in response.brokers}
    except ClientError as exc:
        raise TargetError(f"Metadata from {address} failed: {exc}") from exc
    finally:
        await conn.wait_closed()


async def cluster_ready(
    addresses: dict[int, str], *, fetch_versions=fetch_api_versions, fetch_ids=fetch_broker_ids
) -> str | None:
    """None when every broker answers ApiVersions and Metadata lists all of them; else what is missing."""
    for node_id, address in addresses.items():
        try:
            await fetch_versions(address, 5.0)
        except (TargetError, OSError, TimeoutError) as exc:
            return f"broker {node_id} at {address} does not answer ApiVersions yet ({exc})"
    first = next(iter(addresses.values()))
    try:
        listed = await fetch_ids(first, 5.0)
    except (TargetError, OSError, TimeoutError) as exc:
        return f"Metadata from {first} failed ({exc})"
    missing = sorted(set(addresses) - set(listed))
    if missing:
        return f"Metadata lists brokers {sorted(listed)}, still missing {missing}"
    return None


def wait_until_ready(
    addresses: dict[int, str],
    *,
    timeout: float,
    check=None,
    alive=None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    interval: float = 1.0,
) -> None:
    """Poll ``check`` (``cluster_ready`` by default) until it reports nothing missing; raises TargetError
    on timeout, or as soon as ``alive()`` returns a reason the cluster cannot come up."""
    check = check or (lambda addrs: asyncio.run(cluster_ready(addrs)))
    deadline = clock() + timeout
    last = "not polled yet"
    while True:
        if alive is not None:
            dead = alive()
            if dead:
                raise TargetError(dead)
        last = check(addresses) or ""
        if not last:
            return
        if clock() >= deadline:
            raise TargetError(f"the cluster was not ready after {timeout:g} s: {last}")
        sleep(interval)


# ---- the target ---------------------------------------------------------------------------------


def _connect_engine():
    import docker

    where = os.environ.get("DOCKER_HOST") or "the default socket (unix:///var/run/docker.sock)"
    try:
        client = docker.from_env()
        client.ping()
    except docker_errors.DockerException as exc:
        raise TargetError(
            f"the docker target needs a running Docker engine, and none answered at {where}: {exc}. "
            "Start Docker, or set DOCKER_HOST to one that runs (e.g. unix:///run/user/1000/docker.sock "
            "for rootless Docker, tcp://host:2375), or use another target (reference, rdkafka-mock)."
        ) from exc
    return client


class _ContainerFaults(FaultHooks):
    """broker_down freezes the broker's container (docker pause), broker_up thaws it."""

    def __init__(self, target: DockerTarget) -> None:
        self._target = target

    def broker_down(self, node_id: int) -> None:
        self._target.container_for(node_id).pause()

    def broker_up(self, node_id: int) -> None:
        self._target.container_for(node_id).unpause()


class DockerTarget(Target):
    kind = "docker"

    def __init__(
        self,
        name: str | None = None,
        *,
        version: str | None = None,
        brokers: int = 1,
        client: Any = None,
        image: str | None = None,
        startup_timeout: float = 120.0,
        logs_dir: str | Path | None = None,
        heap: str = DEFAULT_HEAP,
        extra_env: dict[str, str] | None = None,
        ports: Callable[[int], list[int]] = free_ports,
        readiness: Callable[[dict[int, str]], str | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(name)
        if brokers < 1:
            raise TargetError(f"docker target: the broker count must be at least 1, not {brokers}")
        self.version = resolve_version(version)
        self.brokers = brokers
        self.image = image or f"{IMAGE_REPOSITORY}:{self.version}"
        self.startup_timeout = startup_timeout
        logs_dir = logs_dir if logs_dir is not None else os.environ.get("KCONFORM_DOCKER_LOGS")
        self.logs_dir = Path(logs_dir) if logs_dir else None  # None: a fresh temporary directory
        self.heap = heap
        self.extra_env = dict(extra_env or {})
        self.run_id = uuid.uuid4().hex[:12]
        self._client = client
        self._owns_client = client is None
        self._ports = ports
        self._readiness = readiness
        self._clock = clock
        self._sleep = sleep
        self.specs: list[NodeSpec] = []
        self._containers: dict[int, Any] = {}  # node id -> container, in start order
        self._network = None

    # ---- lifecycle ------------------------------------------------------------------------------

    @property
    def labels(self) -> dict[str, str]:
        return {LABEL: self.run_id}

    def start(self) -> None:
        if self._containers:
            raise TargetError(f"docker target {self.name} is already started")
        if self._client is None:
            self._client = _connect_engine()
        try:
            self._ensure_image()
            self.specs = node_specs(
                self.run_id,
                self.brokers,
                self._ports(self.brokers),
                cluster_id=new_cluster_id(),
                heap=self.heap,
                extra_env=self.extra_env,
            )
        except BaseException:
            self.stop()
            raise
        try:
            self._create_network()
            for spec in self.specs:
                self._containers[spec.node_id] = self._run(spec)
            addresses = {s.node_id: f"127.0.0.1:{s.host_port}" for s in self.specs if s.is_broker}
            wait_until_ready(
                addresses,
                timeout=self.startup_timeout,
                check=self._readiness,
                alive=self._first_dead,
                clock=self._clock,
                sleep=self._sleep,
            )
        except TargetError as exc:
            where = self._save_logs()
            self.stop()
            raise TargetError(f"Kafka {self.image} did not start: {exc}; container logs in {where}") from exc
        except docker_errors.DockerException as exc:
            where = self._save_logs()
            self.stop()
            raise TargetError(
                f"Docker refused to start Kafka {self.image}: {exc}; container logs in {where}"
            ) from exc
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Remove the containers (with their anonymous volumes) and the network; whatever is already
        gone is skipped."""
        for container in reversed(list(self._containers.values())):
            try:
                container.remove(force=True, v=True)
            except docker_errors.NotFound:
                pass
            except docker_errors.APIError as exc:
                if "already in progress" not in str(exc) and getattr(exc, "status_code", None) != 409:
                    raise TargetError(f"could not remove container {container.name}: {exc}") from exc
        self._containers.clear()
        if self._network is not None:
            try:
                self._network.remove()
            except docker_errors.NotFound:
                pass
            self._network = None
        if self._owns_client and self._client is not None:
            self._client.close()
            self._client = None

    def _ensure_image(self) -> None:
        from docker.utils import parse_repository_tag

        try:
            self._client.images.get(self.image)
            return
        except docker_errors.ImageNotFound:
            pass
        repository, tag = parse_repository_tag(self.image)
        try:
            self._client.images.pull(repository, tag=tag or "latest")
        except docker_errors.DockerException as exc:
            raise TargetError(
                f"could not pull {self.image}: {exc}. Check the version (apache/kafka has tags from 3.7.0 "
                f"on, e.g. {', '.join(DEFAULT_MATRIX)}) and that the engine can reach Docker Hub."
            ) from exc

    def _create_network(self) -> None:
        if self.brokers > 1:
            self._network = self._client.networks.create(
                f"kconform-{self.run_id}", driver="bridge", labels=self.labels
            )

    def _run(self, spec: NodeSpec) -> Any:
        options: dict[str, Any] = {
            "name": spec.name,
            "hostname": spec.name,
            "environment": spec.environment,
            "labels": {**self.labels, "kconform.node-id": str(spec.node_id), "kconform.roles": spec.roles},
            "detach": True,
        }
        if spec.host_port is not None:
            options["ports"] = {f"{EXTERNAL_PORT}/tcp": ("127.0.0.1", spec.host_port)}
        if self._network is not None:
            options["network"] = self._network.name
        return self._client.containers.run(self.image, **options)

    def _first_dead(self) -> str | None:
        for node_id, container in self._containers.items():
            try:
                container.reload()
            except docker_errors.NotFound:
                return f"container {container.name} (node {node_id}) disappeared"
            if container.status in ("exited", "dead"):
                code = container.attrs.get("State", {}).get("ExitCode")
                return f"container {container.name} (node {node_id}) exited with code {code}"
        return None

    def _save_logs(self) -> Path:
        directory = self.logs_dir
        if directory is None:
            directory = Path(tempfile.mkdtemp(prefix=f"kconform-docker-{self.run_id}-"))
        directory.mkdir(parents=True, exist_ok=True)
        for container in self._containers.values():
            try:
                text = container.logs(stdout=True, stderr=True)
            except docker_errors.DockerException as exc:
                text = f"(logs unavailable: {exc})".encode()
            data = text if isinstance(text, bytes) else str(text).encode()
            (directory / f"{container.name}.log").write_bytes(data)
        return directory

    # ---- what the harness asks ------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        if not self._containers:
            raise TargetError(f"docker target {self.name} is not started")
        return ",".join(f"127.0.0.1:{s.host_port}" for s in self.specs if s.is_broker)

    @property
    def faults(self) -> FaultHooks:
        return _ContainerFaults(self)

    def container_for(self, node_id: int) -> Any:
        spec = next((s for s in self.specs if s.node_id == node_id and s.is_broker), None)
        if spec is None or node_id not in self._containers:
            known = [s.node_id for s in self.specs if s.is_broker]
            raise TargetError(f"docker target {self.name} has no running broker {node_id} (brokers {known})")
        return self._containers[node_id]

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "image": self.image,
            "version": self.version,
            "brokers": self.brokers,
            "run_id": self.run_id,
        }


def cleanup_stale(client: Any = None, run_ids: Iterable[str] | None = None) -> list[str]:
    """Remove containers and networks labelled by kconform (only those of ``run_ids`` when given);
    returns the names removed. Unlabelled containers and networks are never touched."""
    if client is None:
        client = _connect_engine()
    wanted = None if run_ids is None else set(run_ids)
    removed: list[str] = []

    def ours(obj) -> bool:
        labels = obj.attrs.get("Labels") or obj.attrs.get("Config", {}).get("Labels") or {}
        return LABEL in labels and (wanted is None or labels[LABEL] in wanted)

    for container in client.containers.list(all=True, filters={"label": LABEL}):
        if ours(container):
            try:
                container.remove(force=True, v=True)
                removed.append(container.name)
            except docker_errors.NotFound:
                pass
    for network in client.networks.list(filters={"label": LABEL}):
        if ours(network):
            try:
                network.remove()
                removed.append(network.name)
            except docker_errors.NotFound:
                pass
    return removed
