"""A fake Docker client shaped like the Docker SDK, for the docker-target suites of ``harness``
(``test_docker_target*.py``, ``test_docker_cluster_target.py``): it records what the target asks of the
engine; no engine runs. Each method takes the arguments the SDK's does (``Container.kill(signal=None)``,
``Container.stop(timeout=...)``, ``VolumeCollection.create(name, driver=..., labels=...)``) and changes
state as the engine would (a killed or stopped container is ``exited``; starting it again keeps its
volumes). Networks hand out an IP per container that joins them (``172.<18 + n>.0.<k>`` for the n-th
network), which ``attrs["NetworkSettings"]`` reports as the engine does. ``FakeToxiproxy`` stands for
toxiproxy-python's ``Toxiproxy`` client of the docker cluster's Toxiproxy container."""

from __future__ import annotations

from docker import errors as docker_errors

from kconform.harness.targets.docker_target import (
    DEFAULT_MATRIX,
    DockerTarget,
)

# ---- a fake Docker client, shaped like the SDK's ------------------------------------------------


class FakeContainer:
    def __init__(self, engine, name, image, kwargs, status="running"):
        self.engine, self.name, self.image, self.kwargs = engine, name, image, kwargs
        self.status = status
        self.removed = False
        self.attrs = {
            "Config": {"Labels": dict(kwargs.get("labels") or {})},
            "State": {"ExitCode": 0},
            "NetworkSettings": {"Networks": {}},
        }
        if kwargs.get("network"):
            engine.networks.get(kwargs["network"]).attach(self)

    def reload(self):
        if self.removed:
            raise docker_errors.NotFound(f"no container {self.name}")

    def logs(self, stdout=True, stderr=True):
        return f"log of {self.name}\n".encode()

    def pause(self):
        self.engine.calls.append(("pause", self.name))
        self._must_be("running")
        self.status = "paused"

    def unpause(self):
        self.engine.calls.append(("unpause", self.name))
        self._must_be("paused")
        self.status = "running"

    def kill(self, signal=None):
        self.engine.calls.append(("kill", self.name, signal))
        self._must_be("running")  # the engine refuses to signal a paused or exited container
        self.status = "exited"
        self.attrs["State"]["ExitCode"] = 137

    def stop(self, timeout=None):
        self.engine.calls.append(("stop", self.name, timeout))
        self._must_be("running", "exited")  # stopping an exited container is a no-op
        if self.status == "running":
            self.status = "exited"
            self.attrs["State"]["ExitCode"] = 143

    def start(self):
        self.engine.calls.append(("start", self.name))
        self._must_be("exited", "created", "running")  # starting a running container is a no-op
        first, self.status = self.status == "created", "running"
        if first and self.engine.on_run:  # a created container runs when first started
            self.engine.on_run(self)

    def _must_be(self, *states):
        if self.removed:
            raise docker_errors.NotFound(f"no container {self.name}")
        if self.status not in states:
            raise docker_errors.APIError(f"container {self.name} is {self.status}")

    def remove(self, force=False, v=False):
        if self.removed:
            raise docker_errors.NotFound(f"no container {self.name}")
        self.engine.calls.append(("remove", self.name, force, v))
        self.removed = True


class FakeNetwork:
    def __init__(self, engine, name, labels, subnet):
        self.engine, self.name, self.subnet = engine, name, subnet
        self.attrs = {"Labels": dict(labels or {})}
        self.removed = False
        self.members: dict[str, list[str]] = {}  # container name -> its aliases here

    def connect(self, container, aliases=None, **kw):
        """``Network.connect``: the container gets the next IP of this network and the aliases."""
        self.engine.calls.append(("network.connect", self.name, container.name, tuple(aliases or ())))
        self.attach(container, aliases)

    def attach(self, container, aliases=None):
        """What ``connect`` and ``containers.create(network=...)`` do."""
        if container.name in self.members:
            raise docker_errors.APIError(f"{container.name} is already attached to {self.name}")
        self.members[container.name] = list(aliases or ())
        ip = f"{self.subnet}.{len(self.members) + 1}"
        container.attrs["NetworkSettings"]["Networks"][self.name] = {
            "IPAddress": ip,
            "Aliases": list(aliases or ()),
        }

    def remove(self):
        if self.removed:
            raise docker_errors.NotFound(f"no network {self.name}")
        self.engine.calls.append(("network.remove", self.name))
        self.removed = True


def _matches(obj, filters):
    label = (filters or {}).get("label")
    labels = obj.attrs.get("Labels") or obj.attrs.get("Config", {}).get("Labels") or {}
    return label is None or label in labels


class FakeVolume:
    def __init__(self, engine, name, labels):
        self.engine, self.name = engine, name
        self.attrs = {"Name": name, "Driver": "local", "Labels": dict(labels or {})}
        self.removed = False

    def remove(self, force=False):
        if self.removed:
            raise docker_errors.NotFound(f"no volume {self.name}")
        self.engine.calls.append(("volume.remove", self.name))
        self.removed = True


class FakeVolumes:
    def __init__(self, engine):
        self.engine = engine
        self.all: list[FakeVolume] = []

    def create(self, name=None, **kwargs):
        self.engine.calls.append(("volumes.create", name, kwargs.get("driver")))
        volume = FakeVolume(self.engine, name, kwargs.get("labels"))
        self.all.append(volume)
        return volume

    def list(self, filters=None, **kw):
        return [v for v in self.all if not v.removed and _matches(v, filters)]


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

    def create(self, image, **kwargs):
        """A container that runs once started (``on_run`` is called then)."""
        self.engine.calls.append(("containers.create", kwargs["name"]))
        container = FakeContainer(self.engine, kwargs["name"], image, kwargs, status="created")
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
        network = FakeNetwork(self.engine, name, labels, subnet=f"172.{18 + len(self.all)}.0")
        self.all.append(network)
        return network

    def get(self, name):
        for n in self.all:
            if n.name == name and not n.removed:
                return n
        raise docker_errors.NotFound(f"no network {name}")

    def list(self, filters=None, **kw):
        return [n for n in self.all if not n.removed and _matches(n, filters)]


class FakeDocker:
    def __init__(self, images=(f"apache/kafka:{DEFAULT_MATRIX[3]}",)):
        self.calls: list[tuple] = []
        self.on_run = None
        self.images = FakeImages(self, images)
        self.containers = FakeContainers(self)
        self.networks = FakeNetworks(self)
        self.volumes = FakeVolumes(self)

    def live(self):
        return [c for c in self.containers.all if not c.removed]

    def leftovers(self) -> list[str]:
        """Everything created and not removed: what a stopped target must not leave behind."""
        return [
            *(c.name for c in self.live()),
            *(v.name for v in self.volumes.all if not v.removed),
            *(n.name for n in self.networks.all if not n.removed),
        ]


# ---- a fake Toxiproxy, shaped like toxiproxy-python's client -------------------------------------


class FakeProxy:
    def __init__(self, server, name, upstream, listen, enabled=True):
        self.server, self.name, self.upstream, self.listen = server, name, upstream, listen
        self.enabled = enabled
        self.toxics: dict[str, dict] = {}

    def add_toxic(self, name, type, stream="downstream", toxicity=1.0, attributes=None):
        self.server.calls.append(("add_toxic", self.name, name))
        self.toxics[name] = {"type": type, "stream": stream, "attributes": dict(attributes or {})}

    def destroy_toxic(self, name):
        self.server.calls.append(("destroy_toxic", self.name, name))
        del self.toxics[name]

    def disable(self):
        self.server.calls.append(("disable", self.name))
        self.enabled = False

    def enable(self):
        self.server.calls.append(("enable", self.name))
        self.enabled = True

    def destroy(self):
        self.server.calls.append(("destroy", self.name))
        return self.server.all.pop(self.name, None) is not None


class FakeToxiproxy:
    """``create(upstream, name, listen)``, ``get_proxy``, ``proxies`` as toxiproxy-python's
    ``Toxiproxy``; ``fail_on`` names a proxy whose creation the server refuses (HTTP 500)."""

    def __init__(self, fail_on: str | None = None):
        self.all: dict[str, FakeProxy] = {}
        self.calls: list[tuple] = []
        self.fail_on = fail_on

    def create(self, upstream, name, listen=None, enabled=None):
        self.calls.append(("create", name, upstream, listen))
        if name == self.fail_on:
            raise RuntimeError(f"toxiproxy: could not create {name}: 500 listen tcp {listen}: in use")
        if name in self.all:
            raise RuntimeError(f"This proxy already exists: {name}")
        self.all[name] = FakeProxy(self, name, upstream, listen, enabled is not False)
        return self.all[name]

    def get_proxy(self, name):
        return self.all.get(name)

    def proxies(self):
        return dict(self.all)


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
