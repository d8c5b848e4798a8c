"""The ``docker`` target: Apache Kafka's own ``apache/kafka`` image, in KRaft mode, through the Docker SDK.

    with DockerTarget(version="3.9", brokers=3) as target:
        target.bootstrap        # "127.0.0.1:40123,127.0.0.1:40124,127.0.0.1:40125"

The containers (image, layout, listeners) are decided in ``docker_specs``, readiness in
``docker_readiness``; here they are started, watched and removed. The public names of all three are
importable from this module.

Everything the target creates carries the label ``kconform.target=<run id>``; ``cleanup_stale`` removes
what an interrupted run left behind. Startup waits until every broker answers ApiVersions and Metadata
lists every broker; when it does not, the containers' logs are written to a directory named in the error
(``logs_dir``, else $KCONFORM_DOCKER_LOGS, else a new temporary directory) and everything is removed."""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from docker import errors as docker_errors

from ..ports import free_ports
from .base import FaultHooks, Target, TargetError
from .client_listener import checked_broker_properties, container_security, kafka_image_env
from .docker_readiness import cluster_ready, fetch_broker_ids, wait_until_ready
from .docker_specs import (
    CONTROLLER_NODE_ID,
    CONTROLLER_PORT,
    DEFAULT_HEAP,
    DEFAULT_MATRIX,
    DEFAULT_VERSION,
    EXTERNAL_PORT,
    IMAGE_REPOSITORY,
    INTERNAL_PORT,
    VERSION_TAGS,
    NodeSpec,
    new_cluster_id,
    node_specs,
    resolve_version,
)

__all__ = [
    "CONTROLLER_NODE_ID",
    "CONTROLLER_PORT",
    "DEFAULT_HEAP",
    "DEFAULT_MATRIX",
    "DEFAULT_VERSION",
    "EXTERNAL_PORT",
    "IMAGE_REPOSITORY",
    "INTERNAL_PORT",
    "LABEL",
    "VERSION_TAGS",
    "DockerTarget",
    "NodeSpec",
    "cleanup_stale",
    "cluster_ready",
    "fetch_broker_ids",
    "new_cluster_id",
    "node_specs",
    "resolve_version",
    "wait_until_ready",
]

LABEL = "kconform.target"


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
        self._containers: dict[int | str, Any] = {}  # node id (or role) -> container, in start order
        self._volumes: list[Any] = []  # named volumes, removed after the containers
        self._network = None
        self.client_protocol = "PLAINTEXT"
        self._security_env: dict[str, str] = {}
        self._mounts: dict[str, str] = {}  # host directory -> container directory, read-only

    def secure_brokers(self, protocol: str, properties: dict[str, str]) -> None:
        """The brokers' EXTERNAL listener takes ``protocol``, secured by the broker ``properties``
        (as the image's environment, with the files they name mounted read-only)."""
        self.client_protocol = checked_broker_properties(protocol, properties, self.name)
        inside, self._mounts = container_security(properties)
        self._security_env = kafka_image_env(inside)

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
            self._prepare()
        except BaseException:
            self.stop()
            raise
        try:
            self._launch()
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

    def _prepare(self) -> None:
        """What start needs before any container runs: the image and the containers' specs."""
        self._ensure_image()
        self.specs = node_specs(
            self.run_id,
            self.brokers,
            self._ports(self.brokers),
            cluster_id=new_cluster_id(),
            heap=self.heap,
            extra_env={**self._security_env, **self.extra_env},
            external_protocol=self.client_protocol,
        )

    def _launch(self) -> None:
        """Create the network and containers, then wait for the cluster; ``start`` cleans up on failure."""
        self._create_network()
        for spec in self.specs:
            self._containers[spec.node_id] = self._run(spec)
        addresses = {s.node_id: f"127.0.0.1:{s.host_port}" for s in self.specs if s.is_broker}
        self._wait_until_ready(addresses, self.startup_timeout)

    def _wait_until_ready(self, addresses: dict[int, str], timeout: float) -> None:
        wait_until_ready(
            addresses,
            timeout=timeout,
            check=self._readiness,
            alive=self._first_dead,
            clock=self._clock,
            sleep=self._sleep,
            security=self.security,
        )

    def stop(self) -> None:
        """Remove the containers (with their anonymous volumes), named volumes and the network; whatever
        is already gone is skipped."""
        for container in reversed(list(self._containers.values())):
            try:
                container.remove(force=True, v=True)
            except docker_errors.NotFound:
                pass
            except docker_errors.APIError as exc:
                if "already in progress" not in str(exc) and getattr(exc, "status_code", None) != 409:
                    raise TargetError(f"could not remove container {container.name}: {exc}") from exc
        self._containers.clear()
        for volume in reversed(self._volumes):
            try:
                volume.remove(force=True)
            except docker_errors.NotFound:
                pass
            except docker_errors.APIError as exc:
                raise TargetError(f"could not remove volume {volume.name}: {exc}") from exc
        self._volumes.clear()
        self._remove_networks()
        if self._owns_client and self._client is not None:
            self._client.close()
            self._client = None

    def _remove_networks(self) -> None:
        """After the containers, which a network keeps until they are gone."""
        if self._network is not None:
            self._remove_network(self._network)
            self._network = None

    @staticmethod
    def _remove_network(network: Any) -> None:
        try:
            network.remove()
        except docker_errors.NotFound:
            pass

    def _ensure_image(self, image: str | None = None) -> None:
        """Pull ``image`` (the Kafka image by default) unless the engine has it."""
        from docker.utils import parse_repository_tag

        image = image or self.image
        try:
            self._client.images.get(image)
            return
        except docker_errors.ImageNotFound:
            pass
        repository, tag = parse_repository_tag(image)
        try:
            self._client.images.pull(repository, tag=tag or "latest")
        except docker_errors.DockerException as exc:
            check = (
                f"the version (apache/kafka has tags from 3.7.0 on, e.g. {', '.join(DEFAULT_MATRIX)})"
                if image == self.image
                else "the image name"
            )
            raise TargetError(
                f"could not pull {image}: {exc}. Check {check} and that the engine can reach its registry."
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
        if self._mounts:  # key and trust stores the broker config names
            options["volumes"] = {
                host: {"bind": inside, "mode": "ro"} for host, inside in self._mounts.items()
            }
        if self._network is not None:
            options["network"] = self._network.name
        return self._client.containers.run(self.image, **options)

    def _watched(self) -> dict[int | str, Any]:
        """The containers whose exit means the target failed."""
        return self._containers

    def _first_dead(self) -> str | None:
        for node_id, container in self._watched().items():
            try:
                container.reload()
            except docker_errors.NotFound:
                return f"container {container.name} ({_role(node_id)}) disappeared"
            if container.status in ("exited", "dead"):
                code = container.attrs.get("State", {}).get("ExitCode")
                return f"container {container.name} ({_role(node_id)}) exited with code {code}"
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


def _role(key: int | str) -> str:
    return f"node {key}" if isinstance(key, int) else key


def cleanup_stale(client: Any = None, run_ids: Iterable[str] | None = None) -> list[str]:
    """Remove containers, volumes and networks labelled by kconform (only those of ``run_ids`` when
    given); returns the names removed. Unlabelled ones are never touched."""
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
    for volume in client.volumes.list(filters={"label": LABEL}):
        if ours(volume):
            try:
                volume.remove(force=True)
                removed.append(volume.name)
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
