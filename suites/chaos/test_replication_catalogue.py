"""The replication catalogue, briefly, in CI: every scenario on a three-broker reference cluster with a
proxy on every client, replication and controller link (embedded Toxiproxy), each judged by the
checkers. A scenario passes only when its promise held, every fault was applied and the faults were
felt (its ``bites`` counter moved: ISR shrinks and leader changes as Metadata showed them, client
retries, slower operations). The two scenarios whose settings allow loss must lose acknowledged
writes, and the loss is reported as allowed, not hidden, by the name of what lost it (a clean leader
change, an unclean election) with a verdict that names the setting allowing it."""

from __future__ import annotations

import asyncio
import json

import pytest

from kconform.faults.toxiproxy import open_toxiproxy
from kconform.harness.chaos.cluster_topology import ProxiedReferenceCluster
from kconform.harness.chaos.runner import run_scenario
from kconform.harness.chaos.scenarios import load_catalogue

pytestmark = [pytest.mark.slow, pytest.mark.peer]

CATALOGUE = load_catalogue(name="replication")
DURATION = 10.0
# The scenarios whose settings allow loss, with the name their loss goes by (lost across a clean leader
# change, or an unclean election: checkers.failover) and the setting its verdict names.
LOSSY = {
    "acks1-leader-isolated": "lost-write-leader-change",
    "deposed-leader-rejoins": "lost-write-leader-change",
    "unclean-election-full-isr-loss": "lost-write-unclean",
}
SETTING = {
    "acks1-leader-isolated": "acks=1",
    "deposed-leader-rejoins": "acks=1",
    "unclean-election-full-isr-loss": "unclean.leader.election.enable=true",
}


def run(name: str):
    scenario = CATALOGUE[name]
    with open_toxiproxy() as toxiproxy:
        with ProxiedReferenceCluster(toxiproxy.client, brokers=3, overrides=scenario.broker) as cluster:
            return asyncio.run(run_scenario(scenario, cluster, duration=DURATION))


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_replication_scenario_on_a_three_broker_cluster(name):
    result = run(name)
    report = result.to_json()
    # a violation shows with its stretch of history, so that one failed run can be read as it stands
    report["anomalies"] = [a for a in report["anomalies"] if a["verdict"] == "violation"]
    explained = json.dumps(report)
    assert result.verdict == "pass", explained
    assert all(event.ok for event in result.faults), explained
    assert result.stats.get(CATALOGUE[name].bites, 0) > 0, explained
    by_anomaly = {v.anomaly: v for v in result.verdicts}
    for anomaly in CATALOGUE[name].forbids:  # what the promise rules out was checked, and not found
        assert not by_anomaly[anomaly].allowed and by_anomaly[anomaly].count == 0, (anomaly, explained)
    if name in LOSSY:  # Kafka allows this loss under these settings: it happened, and is called allowed
        lost = by_anomaly[LOSSY[name]]
        assert lost.count > 0 and lost.allowed, explained
        assert SETTING[name] in lost.reason, lost.reason  # the verdict names the setting that allows it
        assert result.stats.get("truncations", 0) > 0, explained
