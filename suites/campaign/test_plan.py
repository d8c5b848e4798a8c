"""The campaign's budget arithmetic, a pure decision: what runs, and for how long, in a given time."""

from __future__ import annotations

import pytest

from kconform.harness.campaign import (
    MIN_SCENARIO_S,
    REPORT_RESERVE_S,
    SCENARIO_OVERHEAD_S,
    CampaignError,
    part_directory,
    plan_campaign,
    previous_report,
)
from kconform.harness.chaos.scenarios import load_catalogue

CATALOGUE = load_catalogue()
ON_REFERENCE = [n for n, s in CATALOGUE.items() if s.allowed_on("reference")]
ON_MOCK = [n for n, s in CATALOGUE.items() if s.allowed_on("rdkafka-mock")]


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
    chaos_time = 300 - REPORT_RESERVE_S - plan.diff_seconds
    assert plan.scenario_runs == int(chaos_time // (MIN_SCENARIO_S + SCENARIO_OVERHEAD_S))


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
