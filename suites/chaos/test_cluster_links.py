"""Which links a replicated cluster's faults cut (``faults.cluster_links``), and how the nemesis acts on
roles resolved when a step starts and undoes exactly that at its end, whoever leads by then."""

from __future__ import annotations

import pytest

from kconform.faults.cluster_links import ClusterLinks, LinkSelectorError
from kconform.faults.nemesis import Nemesis
from kconform.faults.schedule import ScheduleError, schedule_from_data

THREE = ClusterLinks((1, 2, 3))


def test_every_directed_link_has_a_proxy():
    links = THREE.all()
    assert len(links) == 3 + 3 + 6
    assert {"client-1", "ctrl-3", "repl-1-2", "repl-2-1"} <= set(links)


def test_isolating_a_leader_from_its_followers_cuts_replication_both_ways_only():
    assert THREE.isolate(2, "followers") == ["repl-1-2", "repl-2-1", "repl-2-3", "repl-3-2"]
    assert THREE.isolate(2, "clients") == ["client-2"]
    assert THREE.isolate(2, "controller") == ["ctrl-2"]
    assert set(THREE.isolate(2, "all")) == {
        "client-2",
        "ctrl-2",
        "repl-1-2",
        "repl-2-1",
        "repl-2-3",
        "repl-3-2",
    }


def test_isolating_the_controller_cuts_every_brokers_controller_link():
    assert THREE.isolate(0, "all") == ["ctrl-1", "ctrl-2", "ctrl-3"]


def test_a_split_cuts_the_minority_from_the_majority_and_the_controller_but_not_from_clients():
    assert THREE.split([1]) == ["ctrl-1", "repl-1-2", "repl-1-3", "repl-2-1", "repl-3-1"]
    five = ClusterLinks((1, 2, 3, 4, 5))
    cut = five.split([1, 2])
    assert "repl-1-2" not in cut and "repl-1-3" in cut and "client-1" not in cut
    with pytest.raises(LinkSelectorError, match="minority of 3 brokers is 1 to 1"):
        THREE.split([1, 2])


def test_selectors_expand_by_role():
    assert THREE.expand("replication:leader", {"leader": 3}.__getitem__) == THREE.replication_of(3)
    assert THREE.expand("clients") == ["client-1", "client-2", "client-3"]
    assert THREE.expand("repl-1-2") == ["repl-1-2"]
    with pytest.raises(LinkSelectorError, match="no broker 7"):
        THREE.isolate(7, "all")
    with pytest.raises(LinkSelectorError, match="names no link"):
        THREE.expand("broker-9")
    with pytest.raises(LinkSelectorError, match="isolate from 'nobody'"):
        THREE.isolate(1, "nobody")


def test_cluster_faults_are_checked_when_loaded():
    schedule = schedule_from_data(
        {
            "step": [
                {
                    "at": "1s",
                    "fault": "isolate",
                    "duration": "2s",
                    "params": {"node": "leader", "from": "followers"},
                }
            ]
        }
    )
    assert schedule.steps[0].params == {"node": "leader", "from": "followers"}
    with pytest.raises(ScheduleError, match="split takes minority"):
        schedule_from_data({"step": [{"fault": "split", "params": {"size": 2}}]})


class Links:
    def __init__(self):
        self.disabled: set[str] = set()
        self.calls: list[tuple[str, bool]] = []

    def links(self):
        return []

    def set_enabled(self, link, enabled):
        self.calls.append((link, enabled))
        (self.disabled.discard if enabled else self.disabled.add)(link)


class Roles:
    """A cluster whose leader moves from 1 to 2 while the fault is on."""

    def __init__(self):
        self.leader = 1
        self.admin_steps = []

    def resolve(self, step):
        if step.kind == "admin":
            return []
        node = self.leader if step.params.get("node") == "leader" else int(step.params["node"])
        return THREE.isolate(node, step.params["from"])

    def admin(self, step):
        self.admin_steps.append(step.fault)


def test_the_end_of_a_fault_undoes_what_its_start_did_though_the_leader_moved():
    schedule = schedule_from_data(
        {
            "step": [
                {"at": 0, "fault": "isolate", "duration": 1, "params": {"node": "leader", "from": "clients"}},
                {"at": 0.5, "fault": "elect"},
            ]
        }
    )
    links, roles = Links(), Roles()
    nemesis = Nemesis(schedule, network=links, cluster=roles)
    from kconform.faults.nemesis import plan

    for event in plan(schedule, 2):
        nemesis.apply(event)
        roles.leader = 2  # the controller moved leadership away from the isolated broker
    assert links.calls == [("client-1", False), ("client-1", True)]
    assert roles.admin_steps == ["elect"]
    assert [e.targets for e in nemesis.log if e.action == "start"][0] == ("client-1",)
    assert all(e.ok for e in nemesis.log)


def test_cluster_faults_need_a_cluster():
    schedule = schedule_from_data({"step": [{"at": 0, "fault": "split", "duration": 1}]})
    nemesis = Nemesis(schedule, network=Links())
    from kconform.faults.nemesis import plan

    nemesis.apply(plan(schedule, 2)[0])
    assert not nemesis.log[0].ok and "needs a replicated cluster" in nemesis.log[0].error


def test_two_samples_of_a_partition_give_its_events():
    from kconform.harness.chaos.cluster_observer import changes, count_truncations

    assert changes((1, 4, (1, 2, 3), (1, 2, 3)), (1, 4, (1, 2, 3), (1, 3))) == ("isr-shrinks",)
    assert changes((1, 4, (1, 2, 3), (1, 3)), (3, 5, (1, 2, 3), (2, 3))) == (
        "leader-changes",
        "isr-shrinks",
        "isr-expands",
    )
    assert changes((1, 4, (1, 2, 3), (1,)), (-1, 5, (1, 2, 3), (1,))) == ("leader-changes", "leaderless")
    assert count_truncations(["INFO fetched", "WARNING t-0: truncated 3 records to offset 7"]) == 1
    kafka = [  # Apache Kafka's UnifiedLog.truncateTo, when it cuts and when it has nothing to cut
        "[2026-11-26 10:00:01,123] INFO [UnifiedLog partition=t-0, dir=/data] Truncating to offset 7",
        "[2026-11-26 10:00:02,456] INFO [UnifiedLog partition=t-1, dir=/data] Truncating to 9 has "
        "no effect as the largest offset in the log is 8",
    ]
    assert count_truncations(kafka) == 1


def test_the_replication_catalogue_runs_on_clusters_and_names_its_topic_settings():
    from kconform.harness.chaos.scenarios import load_catalogue

    catalogue = load_catalogue(name="replication")
    assert len(catalogue) >= 12
    for scenario in catalogue.values():
        assert scenario.targets == ("cluster",), scenario.name
        assert scenario.replication_factor == 3
        assert scenario.schedule(12.0).steps, scenario.name  # every scenario has faults in a short run
    unclean = catalogue["unclean-election-full-isr-loss"]
    assert unclean.topic_configs["unclean.leader.election.enable"] == "true"
    assert [s.fault for s in unclean.schedule(12.0).steps] == ["isolate", "kill"]
    drawn = catalogue["random-cluster-faults"]
    assert drawn.schedule(12.0, seed=1) == drawn.schedule(12.0, seed=1)
    assert drawn.schedule(12.0, seed=1) != drawn.schedule(12.0, seed=2)
    assert all(step.links != ("*",) for step in drawn.schedule(12.0, seed=1).steps)


@pytest.mark.parametrize("duration", [10.0, 12.0])
def test_a_cut_that_must_shrink_the_isr_outlasts_the_leaders_expiry_check(duration):
    """A follower leaves the ISR once it has been behind for replica.lag.time.max.ms, as the leader
    sees at its expiry check every half of that (Kafka's ReplicaManager schedules isr-expiration at
    replicaLagTimeMaxMs / 2): up to 1.5 x the lag after the cut begins, then an AlterPartition and a
    Metadata sample. A scenario that must show an ISR shrink keeps its first cut on for twice the lag,
    so a loaded machine still sees it."""
    from kconform.harness.chaos.cluster_topology import CHAOS_CLUSTER_SETTINGS
    from kconform.harness.chaos.scenarios import load_catalogue

    checked = 0
    for scenario in load_catalogue(name="replication").values():
        if scenario.bites != "isr-shrinks":
            continue
        settings = {**CHAOS_CLUSTER_SETTINGS, **scenario.broker}
        lag_ms = int(settings["replica.lag.time.max.ms"])
        cuts = [s for s in scenario.schedule(duration).steps if s.fault in ("isolate", "kill", "partition")]
        if not cuts:  # a flapping link shrinks the ISR by its rhythm, not by one long cut
            continue
        assert cuts[0].duration >= 2 * lag_ms / 1000, (scenario.name, cuts[0], lag_ms)
        checked += 1
    assert checked >= 3
