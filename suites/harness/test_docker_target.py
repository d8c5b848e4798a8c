"""The docker target up to the Docker SDK: a fake client records what the target asks of the engine
(no engine runs here) through start, stop, pulls, failures, faults and clean-up; the readiness logic
runs on injected probes and clocks; and the CI workflow and smoke script."""

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
    wait_until_ready,
)

from ..support.fake_docker import (
    FakeClock,
    FakeDocker,
    make,
    ports,
)

ROOT = Path(__file__).resolve().parents[2]


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

    login = object()  # a secured clients' listener: every probe must carry it

    async def versions(address, timeout, *, security):
        assert security is login
        if address in down:
            raise TargetError(f"no Kafka-protocol answer at {address}")
        return {18: (0, 3)}

    async def ids(address, timeout, *, security):
        assert security is login
        return set(listed)

    def ready():
        return asyncio.run(cluster_ready(addresses, fetch_versions=versions, fetch_ids=ids, security=login))

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
    assert set(workflow["jobs"]) == {"kafka", "replication-chaos"}  # the second: test_docker_cluster_target
    job = workflow["jobs"]["kafka"]
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
