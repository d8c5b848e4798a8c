"""A fake Docker client shaped like the Docker SDK, for the docker-target suites of ``harness``
(``test_docker_target*.py``): it records what the target asks of the engine; no engine runs."""

from __future__ import annotations

from docker import errors as docker_errors

from kconform.harness.targets.docker_target import (
    DEFAULT_MATRIX,
    DockerTarget,
)

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
