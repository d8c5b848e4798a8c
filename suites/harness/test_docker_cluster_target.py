"""The replicated docker target (``docker:VERSION:N``) up to the Docker SDK and the Toxiproxy API: fake
clients record the network, volumes, containers, environment and proxies it asks for (no engine runs
here), the process faults it turns into Docker calls, the specs it refuses, and that stopping it leaves
nothing behind even when starting failed halfway; and the hosted CI job that runs the replication
catalogue against it."""

from __future__ import annotations

from pathlib import Path

import pytest
from docker import errors as docker_errors

from kconform.faults.cluster_links import ClusterLinks
from kconform.faults.toxiproxy import EmbeddedToxiproxy
from kconform.harness.targets.base import TargetError
from kconform.harness.targets.docker_cluster import DockerClusterTarget, connect_toxiproxy
from kconform.harness.targets.docker_cluster_specs import (
    CHAOS_SETTINGS,
    TOXIPROXY_IMAGE,
    cover,
    plan_cluster,
    property_env,
)
from kconform.harness.targets.docker_target import (
    DEFAULT_MATRIX,
    LABEL,
    DockerTarget,
    cleanup_stale,
    resolve_version,
)
from kconform.harness.targets.registry import make_target

from ..support.fake_docker import FakeClock, FakeDocker, FakeToxiproxy, ports

ROOT = Path(__file__).resolve().parents[2]
KAFKA = "apache/kafka:4.1.0"


def make_cluster(client, toxiproxy=None, brokers=3, readiness=lambda addrs: None, answers=True, **kw):
    """A cluster target on the fake engine; ``answers=False``: its Toxiproxy never answers."""
    clock = FakeClock()
    server = toxiproxy if toxiproxy is not None else FakeToxiproxy()
    return DockerClusterTarget(
        f"docker:4.1.0:{brokers}",
        version="4.1.0",
        brokers=brokers,
        client=client,
        toxiproxy=lambda url: server if answers else None,
        ports=ports,
        readiness=readiness,
        clock=clock,
        sleep=clock.sleep,
        **kw,
    )


def started(brokers=3, **kw):
    client, server = FakeDocker(images=[KAFKA, TOXIPROXY_IMAGE]), FakeToxiproxy()
    target = make_cluster(client, server, brokers=brokers, **kw)
    target.start()
    return client, server, target


# ---- what start creates -------------------------------------------------------------------------


def test_three_brokers_are_networks_volumes_toxiproxy_a_controller_and_three_brokers():
    client, server, target = started()
    run = f"kconform-{target.run_id}"
    lanes = [f"{run}-lane-{b}" for b in (1, 2, 3)]
    assert [n.name for n in client.networks.all] == [run, *lanes]
    assert all(n.attrs["Labels"] == {LABEL: target.run_id} for n in client.networks.all)
    assert [c[1:] for c in client.calls if c[0] == "networks.create"] == [
        (n, "bridge") for n in [run, *lanes]
    ]
    volumes = [f"{run}-controller-100-data", *(f"{run}-kafka-{b}-data" for b in (1, 2, 3))]
    assert [v.name for v in client.volumes.all] == volumes
    assert all(v.attrs["Labels"] == {LABEL: target.run_id} for v in client.volumes.all)
    toxiproxy, controller, *brokers = client.live()
    assert [c.name for c in client.live()] == [
        f"{run}-toxiproxy",
        f"{run}-controller-100",
        *(f"{run}-kafka-{b}" for b in (1, 2, 3)),
    ]
    assert toxiproxy.image == TOXIPROXY_IMAGE and {c.image for c in [controller, *brokers]} == {KAFKA}
    for container in client.live():
        kw = container.kwargs
        assert kw["network"] == run and kw["detach"] is True
        assert kw["labels"][LABEL] == target.run_id
    # Toxiproxy: its API and every client proxy published on 127.0.0.1 (ports() gives 41000 + i)
    assert toxiproxy.kwargs["ports"] == {
        "8474/tcp": ("127.0.0.1", 41000),
        "22001/tcp": ("127.0.0.1", 41001),
        "22002/tcp": ("127.0.0.1", 41002),
        "22003/tcp": ("127.0.0.1", 41003),
    }
    assert "volumes" not in toxiproxy.kwargs and toxiproxy.kwargs["labels"]["kconform.roles"] == "toxiproxy"
    # every Kafka node on a volume of its own at the image's data volume, which log.dirs names
    for container, volume in zip([controller, *brokers], volumes, strict=True):
        assert container.kwargs["volumes"] == {volume: {"bind": "/var/lib/kafka/data", "mode": "rw"}}
        assert container.kwargs["environment"]["KAFKA_LOG_DIRS"] == "/var/lib/kafka/data"
    # the controller publishes nothing; each broker publishes its own client listener (the direct way)
    assert "ports" not in controller.kwargs
    assert [b.kwargs["ports"] for b in brokers] == [{"9092/tcp": ("127.0.0.1", 41004 + i)} for i in range(3)]
    assert target.bootstrap == "127.0.0.1:41001,127.0.0.1:41002,127.0.0.1:41003"
    assert target.direct_addresses == {1: "127.0.0.1:41004", 2: "127.0.0.1:41005", 3: "127.0.0.1:41006"}
    assert target.toxiproxy_url == "http://127.0.0.1:41000"
    target.stop()
    assert client.leftovers() == []


def test_each_broker_joins_its_own_lane_and_toxiproxy_every_lane_as_interbroker():
    client, server, target = started()
    run = f"kconform-{target.run_id}"
    main, *lanes = client.networks.all
    assert main.members == {c.name: [] for c in client.live()}
    assert [lane.members for lane in lanes] == [
        {f"{run}-toxiproxy": ["interbroker"], f"{run}-kafka-{b}": []} for b in (1, 2, 3)
    ]
    # each container joins its lanes after it is created and before it starts
    toxiproxy, broker_2 = f"{run}-toxiproxy", f"{run}-kafka-2"
    calls = [c for c in client.calls if c[0] in ("containers.create", "network.connect", "start")]
    joins = [("network.connect", f"{run}-lane-{b}", toxiproxy, ("interbroker",)) for b in (1, 2, 3)]
    assert calls[:5] == [("containers.create", toxiproxy), *joins, ("start", toxiproxy)]
    at, lane_2 = calls.index(("containers.create", broker_2)), f"{run}-lane-2"
    assert calls[at + 1 : at + 3] == [("network.connect", lane_2, broker_2, ()), ("start", broker_2)]
    client.calls.clear()
    target.stop()
    removed = [c[1] for c in client.calls if c[0] in ("remove", "network.remove")]
    assert removed[-4:] == [f"{run}-lane-{b}" for b in (1, 2, 3)] + [run]  # after every container
    assert client.leftovers() == []


def test_every_link_has_a_proxy_before_any_kafka_node_starts():
    client, server, target = started()
    run = f"kconform-{target.run_id}"
    assert {name: (p.listen, p.upstream) for name, p in server.all.items()} == {
        **{f"client-{b}": (f"0.0.0.0:{22000 + b}", f"{run}-kafka-{b}:9092") for b in (1, 2, 3)},
        **{f"ctrl-{b}": (f"0.0.0.0:{21000 + b}", f"{run}-controller-100:{21000 + b}") for b in (1, 2, 3)},
        # repl-f-l: Toxiproxy's IP on lane f (the fake's network f is 172.18+f.0.0/24, Toxiproxy first on
        # it: .2) at port 20000 + l, to l's INTERNAL listener
        **{
            f"repl-{f}-{to}": (f"172.{18 + f}.0.2:{20000 + to}", f"{run}-kafka-{to}:19092")
            for f, to in [(1, 2), (1, 3), (2, 1), (2, 3), (3, 1), (3, 2)]
        },
    }
    toxiproxy = client.containers.get(f"{run}-toxiproxy")
    assert toxiproxy.attrs["NetworkSettings"]["Networks"][f"{run}-lane-2"]["IPAddress"] == "172.20.0.2"
    runs = [c[1] for c in client.calls if c[0] == "containers.create"]
    assert runs[0] == f"{run}-toxiproxy" and len(server.calls) == 12  # all twelve before the controller
    assert target.links() == sorted(server.all) == target.network.links() == ClusterLinks((1, 2, 3)).all()
    assert target.link_name(2) == "client-2"
    target.stop()


def test_each_broker_advertises_its_proxies_and_dials_the_controller_through_its_own():
    client, server, target = started()
    run, proxy = f"kconform-{target.run_id}", f"kconform-{target.run_id}-toxiproxy"
    controller, *brokers = client.live()[1:]
    env = controller.kwargs["environment"]
    assert {k: v for k, v in env.items() if k not in _SHARED} == {
        "KAFKA_NODE_ID": "100",
        "KAFKA_PROCESS_ROLES": "controller",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": f"100@{run}-controller-100:9093",
        # CONTROLLER for itself, CTRL_<b> for broker b (the listener b names, at the port of ctrl-b)
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER,CTRL_1,CTRL_2,CTRL_3",
        "KAFKA_LISTENERS": "CONTROLLER://:9093,CTRL_1://:21001,CTRL_2://:21002,CTRL_3://:21003",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": (
            "CONTROLLER:PLAINTEXT,CTRL_1:PLAINTEXT,CTRL_2:PLAINTEXT,CTRL_3:PLAINTEXT"
        ),
    }
    # the image refuses KAFKA_ADVERTISED_LISTENERS on a controller; from 3.9 the controller tells brokers
    # its hostname and listener port, and its hostname is Toxiproxy's, so that address is ctrl-b again
    assert "KAFKA_ADVERTISED_LISTENERS" not in env
    assert controller.kwargs["hostname"] == proxy
    for broker in brokers:
        b = int(broker.kwargs["labels"]["kconform.node-id"])
        client_b = f"127.0.0.1:{41000 + b}"
        env = broker.kwargs["environment"]
        assert broker.kwargs["hostname"] == broker.name == f"{run}-kafka-{b}"
        assert {k: v for k, v in env.items() if k not in _SHARED} == {
            "KAFKA_NODE_ID": str(b),
            "KAFKA_PROCESS_ROLES": "broker",
            "KAFKA_CONTROLLER_QUORUM_VOTERS": f"100@{proxy}:{21000 + b}",  # ctrl-b
            "KAFKA_CONTROLLER_LISTENER_NAMES": f"CTRL_{b}",
            "KAFKA_LISTENERS": "INTERNAL://:19092,EXTERNAL://:9092",
            # inter-broker: Toxiproxy on the dialer's lane (repl-<dialer>-b); clients: client-b, on the host
            "KAFKA_ADVERTISED_LISTENERS": f"INTERNAL://interbroker:{20000 + b},EXTERNAL://{client_b}",
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": (
                f"CTRL_{b}:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"
            ),
            "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
        }
        assert server.all[f"client-{b}"].listen.endswith(f":{22000 + b}")  # published at 41000 + b
    ids = {c.kwargs["environment"]["CLUSTER_ID"] for c in [controller, *brokers]}
    assert len(ids) == 1 and len(ids.pop()) == 22
    target.stop()


_SHARED = {
    "CLUSTER_ID",
    "KAFKA_LOG_DIRS",
    "KAFKA_HEAP_OPTS",
    *(property_env(name) for name in CHAOS_SETTINGS),
    *(
        property_env(name)
        for name in (
            "default.replication.factor",
            "min.insync.replicas",
            "offsets.topic.replication.factor",
            "transaction.state.log.replication.factor",
            "transaction.state.log.min.isr",
            "share.coordinator.state.topic.replication.factor",
            "share.coordinator.state.topic.min.isr",
        )
    ),
}


def wrapper_property(key: str) -> str:
    """Kafka's KafkaDockerWrapper turning KAFKA_FOO_BAR into foo.bar (``__`` -> ``_``, ``___`` -> ``-``)."""
    return key.replace("KAFKA_", "").lower().replace("_", ".").replace("...", "-").replace("..", "_")


def test_settings_become_the_properties_the_image_writes_with_replication_at_min_three_n():
    for name in ("replica.lag.time.max.ms", "abc_def.x", "abc-def", "log.message.timestamp.type"):
        assert wrapper_property(property_env(name)) == name
    plan = plan_cluster("r", 3, ports(7), cluster_id="C", settings={"replica.lag.time.max.ms": "5000"})
    for node in plan.nodes:
        env = node.environment
        properties = {
            wrapper_property(k): v for k, v in env.items() if k not in ("CLUSTER_ID", "KAFKA_HEAP_OPTS")
        }
        assert properties["replica.lag.time.max.ms"] == "5000"  # the caller's, over CHAOS_SETTINGS
        assert properties["broker.session.timeout.ms"] == CHAOS_SETTINGS["broker.session.timeout.ms"]
        assert properties["default.replication.factor"] == "3"
        assert properties["offsets.topic.replication.factor"] == "3"
        assert properties["transaction.state.log.replication.factor"] == "3"
        assert properties["min.insync.replicas"] == properties["transaction.state.log.min.isr"] == "2"
    one = plan_cluster("r", 1, ports(3), cluster_id="C").brokers[0].environment
    five = plan_cluster("r", 5, ports(11), cluster_id="C").brokers[0].environment
    assert (one["KAFKA_DEFAULT_REPLICATION_FACTOR"], one["KAFKA_MIN_INSYNC_REPLICAS"]) == ("1", "1")
    assert (five["KAFKA_DEFAULT_REPLICATION_FACTOR"], five["KAFKA_MIN_INSYNC_REPLICAS"]) == ("3", "2")
    assert five["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "3"


# ---- process faults through the Docker API ------------------------------------------------------


def test_kill_restart_pause_and_stop_are_the_matching_docker_calls():
    polls = []
    client, server, target = started(readiness=lambda addrs: polls.append(dict(addrs)))
    broker_2 = client.containers.get(f"kconform-{target.run_id}-kafka-2")
    before = len([c for c in client.calls if c[0] in ("containers.create", "volumes.create")])
    client.calls.clear()
    target.kill(2)
    assert client.calls == [("kill", broker_2.name, "SIGKILL")] and broker_2.status == "exited"
    assert target.alive()  # a node a fault took down is not a crash
    polls.clear()
    target.restart_node(2)
    assert client.calls[-1] == ("start", broker_2.name) and broker_2.status == "running"
    assert polls == [{2: "127.0.0.1:41005"}]  # back once it answers on its own listener
    # the same container on the same volume: nothing new was created
    assert len([c for c in client.calls if c[0] in ("containers.create", "volumes.create")]) == 0 < before
    client.calls.clear()
    target.freeze(3)
    target.thaw(3)
    target.stop_node(1)
    name = f"kconform-{target.run_id}-kafka-"
    assert client.calls == [("pause", f"{name}3"), ("unpause", f"{name}3"), ("stop", f"{name}1", 30)]
    client.calls.clear()
    target.restart_node(1)
    assert client.calls == [("start", f"{name}1")]
    target.stop()
    assert client.leftovers() == []


def test_a_frozen_node_is_thawed_before_it_is_killed_or_stopped():
    client, server, target = started()
    name = f"kconform-{target.run_id}-kafka-1"
    target.freeze(1)
    client.calls.clear()
    target.kill(1)
    assert client.calls == [("unpause", name), ("kill", name, "SIGKILL")]
    target.restart_node(1)
    target.freeze(1)
    client.calls.clear()
    target.restart_node(1)  # running: a clean stop first, then the same container again
    assert client.calls == [("unpause", name), ("stop", name, 30), ("start", name)]
    target.stop()


def test_nodes_are_named_as_the_chaos_layer_names_them():
    """``chaos.docker_topology`` hands these names on (its process driver is tested there)."""
    client, server, target = started()
    controller = f"kconform-{target.run_id}-controller-100"
    assert target.node_ids == (100, 1, 2, 3)
    assert [target.node_id(n) for n in ("0", "controller", "broker-2", "2", 3)] == [100, 100, 2, 2, 3]
    client.calls.clear()
    target.kill(target.node_id("0"))  # faults.cluster_links: the controller is node 0
    target.restart_node(target.node_id("controller"))
    assert [c[:2] for c in client.calls] == [("kill", controller), ("start", controller)]
    target.faults.broker_down(1)
    assert client.calls[-1] == ("pause", f"kconform-{target.run_id}-kafka-1")
    target.faults.broker_up(1)
    with pytest.raises(TargetError, match=r"no node '4' \(brokers \[1, 2, 3\], controller 100\)"):
        target.node_id("4")
    target.stop()


def test_a_node_that_dies_by_itself_is_a_crash():
    client, server, target = started()
    assert target.alive() and target.crash_report() == ""
    broker = client.containers.get(f"kconform-{target.run_id}-kafka-3")
    broker.status, broker.attrs["State"]["ExitCode"] = "exited", 1
    assert not target.alive()
    assert "kafka-3 (node 3) exited with code 1" in target.crash_report()
    target.stop()


def test_the_network_driver_drives_this_clusters_proxies():
    client, server, target = started()
    network = target.network
    network.set_enabled("ctrl-2", False)
    network.add_toxic("repl-2-1", "slow", "latency", "downstream", {"latency": 100})
    assert not server.all["ctrl-2"].enabled and server.all["repl-2-1"].toxics["slow"]["type"] == "latency"
    assert server.all["repl-3-1"].toxics == {}  # the other follower of broker 1 is untouched
    network.remove_toxic("repl-2-1", "slow")
    network.set_enabled("ctrl-2", True)
    assert server.all["ctrl-2"].enabled and server.all["repl-2-1"].toxics == {}
    target.stop()


def test_connect_toxiproxy_waits_for_an_answer_then_drives_that_server():
    """The default client factory over real HTTP, against kconform's embedded Toxiproxy."""
    with EmbeddedToxiproxy() as server:
        client = connect_toxiproxy(server.url)
        proxy = client.create(upstream="127.0.0.1:9", name="client-1", listen="127.0.0.1:0")
        assert sorted(client.proxies()) == ["client-1"] and proxy.upstream == "127.0.0.1:9"
        proxy.destroy()
    assert connect_toxiproxy(server.url) is None  # gone: not answering (yet)


# ---- link granularity ---------------------------------------------------------------------------


def test_every_cut_reaches_exactly_the_links_asked_for():
    shape = ClusterLinks((1, 2, 3))
    assert cover(shape.isolate(2, "clients"), (1, 2, 3)) == (["client-2"], [])
    assert cover(shape.isolate(0, "all"), (1, 2, 3)) == (["ctrl-1", "ctrl-2", "ctrl-3"], [])
    # one directed replication link alone: follower 1 from leader 2, while 3 still fetches from 2
    assert cover(["repl-1-2"], [1, 2, 3]) == (["repl-1-2"], [])
    into_and_out_of_1 = ["repl-1-2", "repl-1-3", "repl-2-1", "repl-3-1"]
    assert cover(shape.isolate(1, "followers"), (1, 2, 3)) == (into_and_out_of_1, [])
    assert cover(shape.split([1]), (1, 2, 3)) == (["ctrl-1", *into_and_out_of_1], [])
    with pytest.raises(TargetError, match="names no link"):
        cover(["repl-1-4"], (1, 2, 3))
    with pytest.raises(TargetError, match="is not a cluster link"):
        cover(["repl-1"], (1, 2, 3))
    client, server, target = started()
    assert target.links_for(["repl-2-1"]) == (["repl-2-1"], [])
    target.stop()


# ---- bad specs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("docker:4.1.0:0", r"'docker:4\.1\.0:0': the broker count must be a positive number, not '0'"),
        (
            "docker:2.8.0:3",
            r"'docker:2\.8\.0:3': Kafka 2\.8\.0 is older than 3\.7, the first release with an ",
        ),
        ("docker:x:3", r"'docker:x:3': 'x' is not a Kafka release; .* 3\.7 or newer"),
        ("docker:latest:3", r"'latest' is not a Kafka release"),
        ("docker::3", r"no Kafka release is named"),
    ],
)
def test_a_bad_cluster_spec_is_a_clear_error_before_any_engine(spec, message):
    with pytest.raises(TargetError, match=message):
        make_target(spec)


def test_the_registry_makes_a_cluster_when_the_spec_counts_brokers():
    target = make_target("docker:4.1.0:3")
    assert isinstance(target, DockerClusterTarget) and isinstance(target, DockerTarget)
    assert (target.version, target.image, target.broker_ids) == ("4.1.0", KAFKA, (1, 2, 3))
    assert make_target("docker:3.9:3").version == "3.9.1"
    assert type(make_target("docker:4.0")) is DockerTarget
    with pytest.raises(TargetError, match="older than 3.7"):
        make_target("docker:3.6.2")  # one node: the same floor
    with pytest.raises(TargetError, match="older than 3.7"):
        resolve_version("2.8")
    with pytest.raises(TargetError, match="broker count must be 1 to 999"):
        DockerClusterTarget(version="4.1.0", brokers=0)


# ---- failures halfway leave nothing behind ------------------------------------------------------


def _refuse_broker_2(client, server):
    def refuse(container):
        if container.name.endswith("kafka-2"):
            raise docker_errors.APIError("port is already allocated")

    client.on_run = refuse


def _refuse_a_proxy(client, server):
    server.fail_on = "repl-1-2"


def _no_address_on_lane_2(client, server):
    def leave(toxiproxy):  # as if it started without the engine attaching lane 2
        toxiproxy.attrs["NetworkSettings"]["Networks"].pop(toxiproxy.name.replace("toxiproxy", "lane-2"))

    client.on_run = leave


def _refuse_the_third_volume(client, server):
    create = client.volumes.create

    def refuse(name=None, **kw):
        if len(client.volumes.all) == 2:
            raise docker_errors.APIError("no space left on device")
        return create(name, **kw)

    client.volumes.create = refuse


def _toxiproxy_exits(client, server):
    def exits(container):
        if container.name.endswith("toxiproxy"):
            container.status = "exited"

    client.on_run = exits


@pytest.mark.parametrize(
    ("fail", "message", "toxiproxy_answers", "ready"),
    [
        (_refuse_broker_2, r"Docker refused .*port is already allocated", True, True),
        (
            _refuse_a_proxy,
            r"refused the proxy repl-1-2 \(172\.19\.0\.2:20002 -> .*kafka-2:19092\)",
            True,
            True,
        ),
        (_no_address_on_lane_2, r"toxiproxy has no IP address on kconform-\w+-lane-2", True, True),
        (_refuse_the_third_volume, r"Docker refused .*no space left", True, True),
        (_toxiproxy_exits, r"toxiproxy \(toxiproxy\) exited", True, True),
        (lambda c, s: None, r"Toxiproxy at http://127\.0\.0\.1:41000 did not answer after 5 s", False, True),
        (lambda c, s: None, r"not ready after 5 s: not yet", True, False),
    ],
)
def test_a_start_that_fails_halfway_removes_everything_it_created(
    tmp_path, fail, message, toxiproxy_answers, ready
):
    client, server = FakeDocker(images=[KAFKA, TOXIPROXY_IMAGE]), FakeToxiproxy()
    fail(client, server)
    target = make_cluster(
        client,
        server,
        answers=toxiproxy_answers,
        startup_timeout=5,
        logs_dir=tmp_path,
        readiness=(lambda addrs: None) if ready else (lambda addrs: "not yet"),
    )
    with pytest.raises(TargetError, match=message) as info:
        target.start()
    assert f"container logs in {tmp_path}" in str(info.value)
    assert client.networks.all and client.leftovers() == []  # something was created, and nothing is left
    assert target.proxies == {} and target.toxiproxy is None
    with pytest.raises(TargetError, match="not started"):
        target.bootstrap  # noqa: B018


def test_a_failed_pull_leaves_nothing_and_stop_is_idempotent():
    client = FakeDocker(images=[KAFKA])
    client.images.pull_error = docker_errors.APIError("denied")
    target = make_cluster(client)
    with pytest.raises(TargetError, match=r"could not pull ghcr\.io/shopify/toxiproxy:2\.12\.0: denied"):
        target.start()
    assert client.leftovers() == [] and not any(c[0] == "containers.create" for c in client.calls)
    client, server, target = started()
    client.containers.all[2].remove(force=True)  # gone behind our back
    client.volumes.all[0].remove()
    target.stop()
    target.stop()
    assert client.leftovers() == []


def test_cleanup_stale_removes_labelled_volumes_too():
    client, server, target = started()  # and never stopped, as by a run that died
    removed = cleanup_stale(client, run_ids=[target.run_id])
    assert len(removed) == 5 + 4 + 1 + 3 and client.leftovers() == []  # containers, volumes, networks
    assert sum(name.endswith("-data") for name in removed) == 4
    assert removed[-3:] == [f"kconform-{target.run_id}-lane-{b}" for b in (1, 2, 3)]
    target.stop()  # everything already gone: nothing to do, no error


# ---- the hosted CI job --------------------------------------------------------------------------


def test_ci_runs_the_replication_catalogue_against_three_broker_docker_clusters():
    try:
        import yaml
    except ModuleNotFoundError as exc:  # a declared test dependency: missing is a broken install
        pytest.fail(f"{exc}: PyYAML is in the [dev] extra, pip install -e '.[dev]'", pytrace=False)
    workflow = yaml.safe_load((ROOT / "ci" / "workflows" / "kafka-matrix.yml").read_text())
    job = workflow["jobs"]["replication-chaos"]
    assert [str(v) for v in job["strategy"]["matrix"]["kafka"]] == list(DEFAULT_MATRIX)
    commands = "\n".join(step.get("run", "") for step in job["steps"])
    assert "kconform chaos --target docker:${{ matrix.kafka }}:3 --catalogue replication" in commands
    assert f"docker pull {TOXIPROXY_IMAGE}" in commands and "cleanup_stale" in commands
    assert "kafka" in workflow["jobs"]  # the version matrix job stays
