"""The checkers catch a replicated cluster that breaks Kafka's replication promises. Each planted
replication bug (``reference_broker/planted.py``, planted on every node of a three-broker reference
cluster) runs under the catalogue scenario whose faults make it matter, and the scenario's verdict must
be a violation naming the anomaly the bug causes; the same scenario passes on an honest cluster
(``test_replication_catalogue.py`` runs every scenario unplanted).

- ``hw-before-isr``: the leader acknowledges acks=all writes its followers have not fetched (the
  replication links lag); when it is killed, the clean new leader lacks them: lost-write-leader-change,
  forbidden at acks=all with min.insync.replicas=2.
- ``isr-never-shrinks``: a follower whose replication links are cut stays in the ISR for the whole cut,
  as every broker's Metadata shows: lagging-replica-in-isr.
- ``follower-skips-truncation``: the deposed leader rejoins without truncating the suffix it appended
  alone, so below its high watermark it holds records the new leader's log does not: replica-divergence.
- ``unclean-election-without-flag``: with unclean election off, the controller elects a replica from
  outside the ISR when the last in-sync one dies; the writes only that one had are gone:
  lost-write-unclean, forbidden by unclean.leader.election.enable=false.
- ``stale-leader-accepts-writes``: the deposed leader, back in touch with the controller, names the new
  leader in its Metadata but keeps acknowledging acks=1 writes: stale-leader-write.

Besides the anomaly it causes, a bug may show what follows from it (``ALSO``): a lost write's offset is
taken by a later record, so the producer sees its sends land out of order."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import pytest

from kconform.faults.toxiproxy import open_toxiproxy
from kconform.harness.chaos.cluster_topology import ProxiedReferenceCluster
from kconform.harness.chaos.runner import run_scenario
from kconform.harness.chaos.scenarios import load_catalogue
from kconform.reference_broker.planted import PLANTED_BUGS

pytestmark = [pytest.mark.slow, pytest.mark.peer]

CATALOGUE = load_catalogue(name="replication")
DURATION = 10.0
ALSO = frozenset({"inconsistent-offsets", "nonmonotonic-send", "int-nonmonotonic-send"})


@dataclass(frozen=True)
class ClusterCase:
    bug: str
    scenario: str
    shows: frozenset[str]  # the violations the checkers must report
    also: frozenset[str] = frozenset()  # what may follow from them


CLUSTER_CASES = [
    ClusterCase(
        "hw-before-isr", "leader-killed-while-followers-lag", frozenset({"lost-write-leader-change"}), ALSO
    ),
    ClusterCase("isr-never-shrinks", "follower-cut-from-leader", frozenset({"lagging-replica-in-isr"})),
    ClusterCase("follower-skips-truncation", "deposed-leader-rejoins", frozenset({"replica-divergence"})),
    ClusterCase(
        "unclean-election-without-flag",
        "full-isr-loss-unclean-election-off",
        frozenset({"lost-write-unclean"}),
        ALSO,
    ),
    ClusterCase("stale-leader-accepts-writes", "acks1-leader-isolated", frozenset({"stale-leader-write"})),
]


def test_every_replication_bug_has_a_scenario_that_catches_it():
    replication_bugs = {"hw-before-isr", "isr-never-shrinks", "follower-skips-truncation"}
    replication_bugs |= {"unclean-election-without-flag", "stale-leader-accepts-writes"}
    assert {c.bug for c in CLUSTER_CASES} == replication_bugs <= set(PLANTED_BUGS)
    for case in CLUSTER_CASES:
        assert case.scenario in CATALOGUE
        # what the bug shows is what the scenario's promise rules out
        assert not case.shows & CATALOGUE[case.scenario].allowed_anomalies(), case


@pytest.mark.parametrize("case", CLUSTER_CASES, ids=lambda c: c.bug)
def test_a_planted_replication_bug_is_reported_as_the_violation_it_causes(case: ClusterCase):
    scenario = CATALOGUE[case.scenario]
    with open_toxiproxy() as toxiproxy:
        with ProxiedReferenceCluster(
            toxiproxy.client, brokers=3, overrides=scenario.broker, planted=(case.bug,)
        ) as cluster:
            result = asyncio.run(run_scenario(scenario, cluster, duration=DURATION))
    explained = json.dumps({k: v for k, v in result.to_json().items() if k != "anomalies"})
    assert result.verdict == "violation", explained
    assert all(event.ok for event in result.faults), explained
    violations = {v.anomaly for v in result.violations}
    assert case.shows <= violations <= case.shows | case.also, (case.bug, violations, explained)
    for verdict in result.violations:  # each names the setting or rule it broke
        assert verdict.reason.startswith("forbidden: "), verdict
    assert all(result.excerpts[anomaly] for anomaly in case.shows)  # with the history that shows it
