"""The chaos catalogue, briefly, in CI: every scenario on the reference broker (and the mock-cluster ones
on librdkafka's mock) behind the embedded Toxiproxy, each judged by the checkers. A scenario passes only
when its promise held, every fault was applied, and the faults reached the client (its ``bites``
counter moved), so a fault layer that silently did nothing fails here."""

from __future__ import annotations

import asyncio
import json

import pytest

from kconform.faults.toxiproxy import open_toxiproxy
from kconform.harness.chaos.runner import run_scenario
from kconform.harness.chaos.scenarios import load_catalogue
from kconform.harness.chaos.topology import ProxiedCluster
from kconform.traces import read_traces

pytestmark = pytest.mark.slow

CATALOGUE = load_catalogue()
DURATION = 7.0


def run(name: str, kind: str):
    with open_toxiproxy() as toxiproxy:
        with ProxiedCluster(kind, toxiproxy.client, brokers=3 if kind == "rdkafka-mock" else 1) as cluster:
            duration = DURATION + CATALOGUE[name].start - 0.5  # the same stretch of faults after a late start
            return asyncio.run(run_scenario(CATALOGUE[name], cluster, duration=duration))


def explain(result) -> str:
    return json.dumps({k: v for k, v in result.to_json().items() if k not in ("anomalies", "faults")})


@pytest.mark.parametrize("name", [n for n, s in CATALOGUE.items() if s.allowed_on("reference")])
def test_scenario_on_the_reference_broker(name):
    result = run(name, "reference")
    assert result.verdict == "pass", explain(result)
    assert result.operations.get("ok", 0) > 100
    by_anomaly = {v.anomaly: v for v in result.verdicts}
    for anomaly in CATALOGUE[name].forbids:  # what the promise rules out was checked, and not found
        assert not by_anomaly[anomaly].allowed and by_anomaly[anomaly].count == 0, anomaly
    if name == "acks0-resets":
        assert by_anomaly["lost-write"].allowed  # loss is measured, not a violation
    if name == "no-idempotence-retries":
        assert by_anomaly["duplicate"].allowed and by_anomaly["nonmonotonic-send"].allowed
    if CATALOGUE[name].settings.get("enable.idempotence") is True:
        assert by_anomaly["duplicate"].count == 0 and by_anomaly["lost-write"].count == 0
    if name == "group-link-flaps":
        assert result.stats["assignments"] >= 3 and by_anomaly["double-ownership"].count == 0
    if name == "txn-latency":
        assert by_anomaly["G1a"].count == 0 and not by_anomaly["G1a"].allowed


@pytest.mark.parametrize("name", [n for n, s in CATALOGUE.items() if s.targets == ("rdkafka-mock",)])
def test_mock_scenario_through_its_own_hooks(name):
    result = run(name, "rdkafka-mock")
    assert result.verdict == "pass", explain(result)
    assert all(e.ok for e in result.faults) and len(result.faults) >= 4


def test_the_checkers_catch_the_mock_duplicating_retried_idempotent_sends():
    """The mock checks sequence numbers only for transactional producers (pinned in
    suites/client/test_producer_live.py), so an idempotent producer whose requests are cut by
    reset_peer and resent gets duplicates, and the checkers report them as a broken promise."""
    result = run("idempotent-reset-peer", "rdkafka-mock")
    assert result.verdict == "violation", explain(result)
    assert {v.anomaly for v in result.violations} == {"duplicate"}
    assert result.excerpts["duplicate"]  # the history that shows it


def test_kconform_chaos_writes_chaos_json_traces_and_an_exit_code(tmp_path):
    from click.testing import CliRunner

    from kconform.harness.cli import cli

    out = tmp_path / "run"
    args = ["chaos", "--scenario", "idempotent-partition-heal", "--duration", "5s", "--out", str(out)]
    outcome = CliRunner().invoke(cli, args)
    assert outcome.exit_code == 0, outcome.output
    assert "idempotent-partition-heal" in outcome.output and "pass" in outcome.output
    document = json.loads((out / "chaos.json").read_text())
    assert document["toxiproxy"]["kind"] in ("binary", "embedded")  # toxiproxy-server on PATH, else ours
    [result] = document["results"]
    assert result["verdict"] == "pass" and result["faults"][0]["action"] == "start"
    rows = read_traces(out).to_pylist()
    faults = [r for r in rows if r["api_name"] == "fault"]
    sends = [r for r in rows if r["api_name"] == "Produce"]
    assert len(faults) == len(result["faults"]) and faults[0]["signature"].startswith("start partition@")
    assert len(sends) == result["operations"]["ok"] and any(r["faults"] for r in sends)
    assert all(r["verdict"] == "pass" for r in rows)


def test_bad_arguments_are_clear_errors(tmp_path):
    from click.testing import CliRunner

    from kconform.harness.cli import cli

    runner = CliRunner()
    for args, message in [
        (["chaos", "--scenario", "nope"], "unknown scenario"),
        (["chaos", "--target", "bogus"], "reference[:N], docker:VERSION:N or rdkafka-mock"),
        (["chaos", "--target", "docker"], "docker:VERSION:N with N >= 2 brokers"),
        (["chaos", "--duration", "1s"], "at least 4s"),
        (["chaos", "--target", "rdkafka-mock", "--scenario", "broker-freeze"], "do not run on rdkafka-mock"),
    ]:
        outcome = runner.invoke(cli, args)
        assert outcome.exit_code == 2 and message in outcome.output, outcome.output
    listed = runner.invoke(cli, ["chaos", "--list"])
    assert listed.exit_code == 0 and "group-link-flaps" in listed.output
