"""``kconform chaos --target docker:VERSION:N``, with no Docker engine: the fake Docker and Toxiproxy
clients (``support.fake_docker``) record the containers, proxies, ``docker kill``/``stop``/``pause``
and Toxiproxy calls the chaos layer makes. Roles need a Kafka that answers Metadata, so a three-broker
reference cluster listens where the containers' published ports would be: roles resolve against its
real partition state, and each fault of the replication catalogue is checked against the container
and proxy names of the broker that really leads (or follows, or controls). Every cluster link has a
proxy of its own, so no scenario is skipped for a cut the layout cannot make alone; should one ever be,
it is skipped with the reason, never passed."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from kconform.faults.cluster_links import ClusterLinks, LinkSelectorError
from kconform.faults.nemesis import Nemesis, plan
from kconform.faults.schedule import Schedule, schedule_from_data
from kconform.harness.chaos import scenario_set
from kconform.harness.chaos.cluster_topology import CHAOS_CLUSTER_SETTINGS
from kconform.harness.chaos.docker_topology import DockerLinks, ProxiedDockerCluster, unsupported
from kconform.harness.chaos.replication_cuts import replication_cuts
from kconform.harness.chaos.scenario_set import (
    SkippedScenario,
    docker_cluster_of,
    parse_target,
    run_chaos,
)
from kconform.harness.chaos.scenarios import load_catalogue
from kconform.harness.cli import cli
from kconform.harness.cli.chaos import chaos as chaos_command
from kconform.harness.cli.chaos import failed
from kconform.harness.targets.base import TargetError
from kconform.harness.targets.docker_cluster_specs import CHAOS_SETTINGS, TOXIPROXY_IMAGE
from kconform.harness.targets.docker_target import DEFAULT_MATRIX
from kconform.reference_broker.cluster_processes import start_cluster

from ..support.fake_docker import FakeDocker, FakeToxiproxy

ROOT = Path(__file__).resolve().parents[2]
KAFKA = "apache/kafka:4.1.0"
CATALOGUE = load_catalogue(name="replication")
DURATION = 6.0


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    """Three brokers answering Kafka's protocol where the docker cluster's ports say its brokers are."""
    running = start_cluster(tmp_path_factory.mktemp("brokers"), 3, overrides=CHAOS_CLUSTER_SETTINGS)
    yield running
    running.stop()


def broker_ports(kafka) -> list[int]:
    return [int(kafka.brokers[b].bootstrap.rpartition(":")[2]) for b in (1, 2, 3)]


def docker_options(kafka, servers: list[FakeToxiproxy], client: FakeDocker) -> dict:
    """DockerClusterTarget's keywords: the fake engine, a fresh fake Toxiproxy per cluster, and host
    ports that send the client and direct addresses to the reference brokers."""

    def toxiproxy(url):
        servers.append(FakeToxiproxy())
        return servers[-1]

    ports = broker_ports(kafka)
    return {
        "client": client,
        "toxiproxy": toxiproxy,
        "ports": lambda n: [41000, *ports, *ports],
        "readiness": lambda addresses: None,
    }


def docker_cluster(kafka, overrides=None):
    client, servers = FakeDocker(images=[KAFKA, TOXIPROXY_IMAGE]), []
    cluster = ProxiedDockerCluster(
        "4.1.0", brokers=3, overrides=overrides, **docker_options(kafka, servers, client)
    )
    return client, servers, cluster


def settled(cluster, topic: str):
    """Partition 0's state once its ISR is whole, so the follower a role names is fixed."""
    cluster.create_topic(topic, 3)
    deadline = time.monotonic() + 15
    while True:
        try:
            state = cluster.partition_state(0)
        except LinkSelectorError:  # no broker has the new topic in its metadata yet (a loaded machine)
            if time.monotonic() > deadline:
                raise
        else:
            if len(state.isr) == 3 or time.monotonic() > deadline:
                return state
        time.sleep(0.1)


# ---- target specs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "kind", "docker"),
    [
        ("docker:4.1.0:3", ("cluster", 3), ("4.1.0", 3)),
        ("docker:3.9:2", ("cluster", 2), ("3.9.1", 2)),  # a short release: its newest image
        ("reference:3", ("cluster", 3), None),
        ("rdkafka-mock", ("rdkafka-mock", 3), None),
    ],
)
def test_a_docker_cluster_is_a_replicated_cluster_to_chaos(spec, kind, docker):
    assert parse_target(spec) == kind and docker_cluster_of(spec) == docker


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("docker", r"docker:VERSION:N with N >= 2 brokers \(e\.g\. docker:4\.1\.1:3\)"),
        ("docker:4.1.0", r"docker:VERSION:N with N >= 2 brokers"),
        ("docker:4.1.0:1", r"'docker:4\.1\.0:1': a docker chaos cluster has 2 to 999 brokers, not 1"),
        ("docker:4.1.0:1000", r"2 to 999 brokers, not 1000"),
        ("docker:4.1.0:x", r"the broker count must be a number, not 'x'"),
        ("docker:2.8.0:3", r"Kafka 2\.8\.0 is older than 3\.7"),
        ("docker:latest:3", r"'latest' is not a Kafka release"),
        ("docker::3", r"no Kafka release is named"),
        ("docker:4.1.0:3@kafka=3.9", r"only the reference broker's kafka=VERSION option"),
        ("bogus", r"reference\[:N\], docker:VERSION:N or rdkafka-mock\[:BROKERS\], not 'bogus'"),
    ],
)
def test_a_bad_docker_spec_is_a_clear_error(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_target(spec)


# ---- which scenarios the docker layout can cut --------------------------------------------------

# the scenarios whose faults each test below replays against the fake proxies and containers
REPLAYED = {
    "leader-isolated-from-followers",
    "follower-cut-from-leader",
    "replication-bandwidth",
    "leader-isolated-from-clients",
    "controller-isolated",
    "replication-latency",
    "leader-paused-past-session",
    "leader-killed",
    "follower-killed",
    "controller-and-leader-killed",
    "leader-bounced-cleanly",
    "transactions-leader-killed",
    "leader-killed-while-followers-lag",
    "group-kip848-leader-killed",
    "acks0-leader-killed",
}


def test_every_replication_scenario_is_cut_exactly_so_none_is_unsupported():
    assert len(CATALOGUE) == 25
    for brokers in ((1, 2, 3), (1, 2)):
        assert {n: unsupported(s.schedule(20.0), brokers) for n, s in CATALOGUE.items()} == dict.fromkeys(
            CATALOGUE
        )


def test_unsupported_still_names_the_first_step_a_wider_layout_could_not_cut(monkeypatch):
    """The guard for a layout whose proxies carry more than one link (as replication once was)."""
    from kconform.harness.chaos import docker_topology

    monkeypatch.setattr(docker_topology, "cover", lambda links, brokers: (links, ["repl-3-2"]))
    assert unsupported(CATALOGUE["leader-isolated-from-followers"].schedule(20.0), (1, 2, 3)) == (
        "isolate@*(from=followers,node=leader) cannot be cut alone (with the leader on broker 1 it would "
        "also cut repl-3-2): the docker cluster's proxies carry more links than the step names"
    )


# ---- the cluster a run gets ---------------------------------------------------------------------


def test_a_docker_chaos_cluster_starts_containers_and_proxies_and_offers_what_the_runner_uses(kafka):
    client, servers, cluster = docker_cluster(kafka, overrides={"replica.lag.time.max.ms": "600"})
    with cluster:
        run = f"kconform-{cluster.target.run_id}"
        assert [c.name for c in client.live()] == [
            f"{run}-toxiproxy",
            f"{run}-controller-100",
            *(f"{run}-kafka-{b}" for b in (1, 2, 3)),
        ]
        [server] = servers
        assert sorted(server.all) == ClusterLinks((1, 2, 3)).all()  # 3 client, 3 ctrl, 6 repl
        assert cluster.kind == "docker:4.1.0:3" and cluster.cluster_driver is cluster
        assert cluster.mock is None and cluster.client_settings == {}
        ports = broker_ports(kafka)
        assert cluster.bootstrap == ",".join(f"127.0.0.1:{p}" for p in ports)
        assert [cluster.broker_address(b) for b in (1, 2, 3)] == [("127.0.0.1", p) for p in ports]
        # the scenario's broker settings over the chaos defaults, in every broker's environment
        assert cluster.overrides == {**CHAOS_SETTINGS, "replica.lag.time.max.ms": "600"}
        broker = client.containers.get(f"{run}-kafka-2")
        assert broker.kwargs["environment"]["KAFKA_REPLICA_LAG_TIME_MAX_MS"] == "600"
        assert cluster.broker_output() == [
            f"log of {run}-controller-100",
            *(f"log of {run}-kafka-{b}" for b in (1, 2, 3)),
        ]
        assert cluster.processes.nodes() == ["1", "2", "3"]
    assert client.leftovers() == []


def test_the_process_driver_turns_node_names_into_docker_calls(kafka):
    client, _, cluster = docker_cluster(kafka)
    with cluster:
        run = f"kconform-{cluster.target.run_id}"
        client.calls.clear()
        processes = cluster.processes
        processes.kill("0")  # faults.cluster_links: the controller is node 0
        processes.restart("0")
        processes.freeze("2")
        processes.thaw("2")
        processes.stop("3")
        processes.restart("3")
        assert client.calls == [
            ("kill", f"{run}-controller-100", "SIGKILL"),
            ("start", f"{run}-controller-100"),
            ("pause", f"{run}-kafka-2"),
            ("unpause", f"{run}-kafka-2"),
            ("stop", f"{run}-kafka-3", 30),
            ("start", f"{run}-kafka-3"),
        ]


# ---- each fault of the replication catalogue, on the brokers that really hold the roles ----------


def expected_calls(name: str, run: str, leader: int, follower: int) -> tuple[list, list]:
    """(Docker calls, Toxiproxy calls) a scenario's faults make in a DURATION run."""
    broker = f"{run}-kafka-"
    killed = [("kill", f"{broker}{leader}", "SIGKILL"), ("start", f"{broker}{leader}")]
    every = ["repl-1-2", "repl-1-3", "repl-2-1", "repl-2-3", "repl-3-1", "repl-3-2"]
    latency = [("add_toxic", link, "kconform-0-latency") for link in every]
    unlatency = [("destroy_toxic", link, "kconform-0-latency") for link in every]
    of_leader, of_follower = (
        ClusterLinks((1, 2, 3)).replication_of(leader),
        ClusterLinks((1, 2, 3)).replication_of(follower),
    )
    return {
        "leader-isolated-from-followers": (
            [],
            [("disable", link) for link in of_leader] + [("enable", link) for link in of_leader],
        ),
        "follower-cut-from-leader": (
            [],
            [("disable", link) for link in of_follower] + [("enable", link) for link in of_follower],
        ),
        "replication-bandwidth": (
            [],
            [("add_toxic", link, "kconform-0-bandwidth") for link in of_leader]
            + [("destroy_toxic", link, "kconform-0-bandwidth") for link in of_leader],
        ),
        "leader-isolated-from-clients": (
            [],
            [("disable", f"client-{leader}"), ("enable", f"client-{leader}")],
        ),
        "controller-isolated": (
            [],
            [("disable", f"ctrl-{b}") for b in (1, 2, 3)] + [("enable", f"ctrl-{b}") for b in (1, 2, 3)],
        ),
        "replication-latency": ([], latency + unlatency),
        "leader-paused-past-session": (
            [("pause", f"{broker}{leader}"), ("unpause", f"{broker}{leader}")],
            [],
        ),
        "leader-killed": (killed, []),
        "transactions-leader-killed": (killed, []),
        "group-kip848-leader-killed": (killed, []),
        "acks0-leader-killed": (killed, []),
        "follower-killed": (
            [("kill", f"{broker}{follower}", "SIGKILL"), ("start", f"{broker}{follower}")],
            [],
        ),
        "controller-and-leader-killed": (
            [
                ("kill", f"{run}-controller-100", "SIGKILL"),
                ("kill", f"{broker}{leader}", "SIGKILL"),
                ("start", f"{run}-controller-100"),
                ("start", f"{broker}{leader}"),
            ],
            [],
        ),
        "leader-bounced-cleanly": ([("stop", f"{broker}{leader}", 30), ("start", f"{broker}{leader}")], []),
        "leader-killed-while-followers-lag": (killed, latency + unlatency),
    }[name]


@pytest.mark.parametrize("name", sorted(REPLAYED))
def test_each_fault_reaches_the_container_or_proxy_of_the_node_in_that_role(kafka, name):
    client, servers, cluster = docker_cluster(kafka)
    with cluster:
        state = settled(cluster, f"roles-{name}")
        leader = state.leader
        follower = min(b for b in state.isr if b != leader)
        [server] = servers
        client.calls.clear()
        server.calls.clear()
        schedule = CATALOGUE[name].schedule(DURATION)
        nemesis = Nemesis(schedule, network=cluster.network, processes=cluster.processes, cluster=cluster)
        for event in plan(schedule, DURATION):
            nemesis.apply(event)
        docker_calls, toxiproxy_calls = expected_calls(
            name, f"kconform-{cluster.target.run_id}", leader, follower
        )
        assert client.calls == docker_calls
        assert server.calls == toxiproxy_calls
        assert all(e.ok for e in nemesis.log), nemesis.log
        assert all(p.enabled and p.toxics == {} for p in server.all.values())  # every fault undone


def test_the_fault_log_names_cluster_links_so_replication_cuts_are_read_from_it(kafka):
    client, servers, cluster = docker_cluster(kafka)
    with cluster:
        settled(cluster, "cut-everything")
        [server] = servers
        schedule = schedule_from_data({"step": [{"at": 0, "fault": "partition", "links": ["replication"]}]})
        nemesis = Nemesis(schedule, network=cluster.network, cluster=cluster)
        start, end = plan(schedule, 2.0)
        nemesis.apply(start)
        pairs = [(f, to) for f in (1, 2, 3) for to in (1, 2, 3) if f != to]
        assert {n for n, p in server.all.items() if not p.enabled} == {f"repl-{f}-{to}" for f, to in pairs}
        nemesis.apply(end)
    assert nemesis.log[0].targets == tuple(f"repl-{f}-{to}" for f, to in pairs)
    cuts = replication_cuts(nemesis.log, 0, 1000, 2.0)
    assert sorted((c.follower, c.leader) for c in cuts) == pairs


def test_a_cut_wider_than_asked_is_refused_not_applied(kafka, monkeypatch):
    """The safety net behind ``unsupported``, for a layout whose proxies would cut wider than asked: a
    step resolved wider at run time changes nothing."""
    from kconform.harness.chaos import docker_topology

    monkeypatch.setattr(docker_topology, "cover", lambda links, brokers: (links, ["repl-9-9"]))
    client, servers, cluster = docker_cluster(kafka)
    with cluster:
        leader = settled(cluster, "too-wide").leader
        [server] = servers
        server.calls.clear()
        first = Schedule(CATALOGUE["leader-isolated-from-followers"].schedule(DURATION).steps[:1])
        nemesis = Nemesis(first, network=cluster.network, cluster=cluster)
        nemesis.apply(plan(first, DURATION)[0])
    [event] = nemesis.log
    asked = ", ".join(ClusterLinks((1, 2, 3)).isolate(leader, "followers"))
    assert not event.ok and server.calls == []
    assert f"docker:4.1.0:3 cannot cut {asked} alone (repl-9-9 too)" in event.error


def test_reassignment_moves_the_real_partition_through_the_brokers_own_listeners(kafka):
    client, servers, cluster = docker_cluster(kafka)
    with cluster:
        before = settled(cluster, "reassigned").replicas
        first = Schedule(CATALOGUE["reassignment-under-load"].schedule(DURATION).steps[:1])
        nemesis = Nemesis(first, cluster=cluster)
        nemesis.apply(plan(first, DURATION)[0])
        rotated = before[1:] + before[:1]  # the next broker becomes the preferred leader
        deadline = time.monotonic() + 15
        while cluster.partition_state(0).replicas != rotated and time.monotonic() < deadline:
            time.sleep(0.1)
        assert nemesis.log[0].ok and cluster.partition_state(0).replicas == rotated
        assert [c for c in client.calls if c[0] in ("kill", "stop", "pause")] == []


def test_each_link_is_driven_through_the_proxy_of_its_own_name():
    server = FakeToxiproxy()
    for link in ClusterLinks((1, 2, 3)).all():
        server.create(upstream="x:1", name=link, listen="0.0.0.0:1")
    links = DockerLinks(server, (1, 2, 3))
    assert links.proxy_of("repl-1-2") == "repl-1-2" and links.proxy_of("client-1") == "client-1"
    links.add_toxic("repl-1-2", "slow", "bandwidth", "downstream", {"rate": 1})
    assert server.all["repl-1-2"].toxics["slow"] == {
        "type": "bandwidth",
        "stream": "downstream",
        "attributes": {"rate": 1},
    }
    assert server.all["repl-3-2"].toxics == {}  # follower 3 still fetches from 2 at full speed
    links.set_enabled("repl-2-1", False)
    links.remove_toxic("repl-1-2", "slow")
    links.set_enabled("repl-2-1", True)
    assert server.calls[12:] == [
        ("add_toxic", "repl-1-2", "slow"),
        ("disable", "repl-2-1"),
        ("destroy_toxic", "repl-1-2", "slow"),
        ("enable", "repl-2-1"),
    ]
    with pytest.raises(TargetError, match="names no link"):
        links.set_enabled("repl-1-4", False)


# ---- a whole run, and the command line ----------------------------------------------------------


def test_a_chaos_run_on_docker_runs_what_it_can_cut_and_skips_the_rest_with_the_reason(
    kafka, tmp_path, monkeypatch
):
    # every scenario can be cut; a layout that could not cut minority-split would skip it so
    reason = "split@*(minority=1) cannot be cut alone (it would also cut repl-2-3)"
    cuts_wider = {CATALOGUE["minority-split"].schedule(DURATION).steps[0].label()}
    monkeypatch.setattr(
        scenario_set, "unsupported", lambda s, brokers: reason if s.steps[0].label() in cuts_wider else None
    )
    client, servers = FakeDocker(images=[KAFKA, TOXIPROXY_IMAGE]), []
    chosen = [CATALOGUE["leader-killed"], CATALOGUE["minority-split"]]
    results = run_chaos(
        "docker:4.1.0:3",
        chosen,
        duration=DURATION,
        out=tmp_path,
        docker_options=docker_options(kafka, servers, client),
    )
    ran, skipped = results
    assert ran.target == "docker:4.1.0:3" and ran.error == ""
    # one cluster for the scenario that ran: its containers and twelve proxies, all gone afterwards
    names = [c.name for c in client.containers.all]
    run = names[0].removesuffix("-toxiproxy")
    assert names == [f"{run}-toxiproxy", f"{run}-controller-100", *(f"{run}-kafka-{b}" for b in (1, 2, 3))]
    [server] = servers
    assert sorted(server.all) == ClusterLinks((1, 2, 3)).all()
    assert client.leftovers() == []
    # the leader the brokers reported was killed with SIGKILL and started again
    [start] = [e for e in ran.faults if e.action == "start"]
    [leader] = start.targets
    killed = next(n for n in names if n.endswith(f"-kafka-{leader}"))
    after_launch = client.calls[client.calls.index(("start", f"{run}-kafka-3")) + 1 :]
    assert [c for c in after_launch if c[0] in ("kill", "start")] == [
        ("kill", killed, "SIGKILL"),
        ("start", killed),
    ]
    # the fake kill moved nothing: no leader change, so the run proves nothing, and says so
    assert ran.verdict == "faults-did-not-bite"
    assert isinstance(skipped, SkippedScenario) and skipped.verdict == "skipped"
    assert skipped.reason == reason
    document = json.loads((tmp_path / "chaos.json").read_text())
    assert document["toxiproxy"] == {"kind": "container", "url": None, "image": TOXIPROXY_IMAGE}
    assert [(r["scenario"], r["verdict"]) for r in document["results"]] == [
        ("leader-killed", "faults-did-not-bite"),
        ("minority-split", "skipped"),
    ]
    assert document["results"][1]["reason"] == skipped.reason
    assert failed(results) and failed([skipped]) and not failed([SimpleNamespace(verdict="pass"), skipped])


def test_the_command_line_takes_docker_clusters_and_refuses_a_toxiproxy_for_them():
    runner = CliRunner()
    listed = runner.invoke(cli, ["chaos", "--target", "docker:4.1.0:3", "--list"])
    assert listed.exit_code == 0 and "leader-killed" in listed.output and "minority-split" in listed.output
    refused = runner.invoke(cli, ["chaos", "--target", "docker:4.1.0:3", "--toxiproxy", "http://127.0.0.1:1"])
    assert refused.exit_code == 2 and "runs its own Toxiproxy container" in refused.output


def test_the_hosted_jobs_chaos_command_parses_against_the_cli():
    try:
        import yaml
    except ModuleNotFoundError as exc:  # a declared test dependency: missing is a broken install
        pytest.fail(f"{exc}: PyYAML is in the [dev] extra, pip install -e '.[dev]'", pytrace=False)
    workflow = yaml.safe_load((ROOT / "ci" / "workflows" / "kafka-matrix.yml").read_text())
    job = workflow["jobs"]["replication-chaos"]
    [command] = [s["run"] for s in job["steps"] if "kconform chaos" in s.get("run", "")]
    for version in job["strategy"]["matrix"]["kafka"]:
        text = command.replace("${{ matrix.kafka }}", str(version))
        text = text.replace("${{ github.workspace }}", "/work").replace("\\\n", " ")  # bash's continuation
        argv = shlex.split(text)
        assert argv[:2] == ["kconform", "chaos"]
        params = chaos_command.make_context("chaos", argv[2:]).params
        assert params["catalogue_name"] == "replication" and params["toxiproxy_url"] is None
        assert parse_target(params["target"]) == ("cluster", 3)
        assert docker_cluster_of(params["target"]) == (str(version), 3)
    assert [str(v) for v in job["strategy"]["matrix"]["kafka"]] == list(DEFAULT_MATRIX)
