"""``kconform bench diff`` reports what the issue's goals are about: the harness's own time against the
brokers', and shrinking's share of a run with differences, each with its denominator."""

from __future__ import annotations

from types import SimpleNamespace

from click.testing import CliRunner

from kconform.harness.bench.diff_bench import GOAL_OVERHEAD, GOAL_SHRINK_SHARE, overhead_rows, shrinking_rows
from kconform.harness.cli import cli
from kconform.harness.diff.results import CampaignResult


def test_overhead_is_the_harness_time_over_the_brokers_time():
    result = CampaignResult("r", ("reference", "reference"))
    result.cases, result.operations, result.drawing_seconds, result.broker_seconds = 100, 900, 12.0, 10.0
    rows, detail = overhead_rows(result)
    per_second, overhead = rows
    assert per_second.ours == 900 / 12.0
    assert overhead.ours == 0.2 and overhead.peer_value == GOAL_OVERHEAD and not overhead.higher_is_better
    assert "900 operations" in detail and "10.0 s" in detail and "2.0 s" in detail


def test_shrinking_share_and_small_cases_count_only_causes_shown_again():
    result = CampaignResult("r", ("reference", "rdkafka-mock"))
    result.cases, result.seconds, result.shrink_seconds = 300, 90.0, 30.0
    result.causes = {
        "a": SimpleNamespace(reproduced=True, stored_operations=1),
        "b": SimpleNamespace(reproduced=True, stored_operations=5),
        "c": SimpleNamespace(reproduced=False, stored_operations=26),  # never shown again: not shrunk
    }
    rows, detail = shrinking_rows(result, "rdkafka-mock")
    share, small = rows
    assert share.ours == 30.0 / 90.0 and share.peer_value == GOAL_SHRINK_SHARE
    assert small.ours == 0.5  # 1 of the 2 shrunk
    assert "3 causes, 2 shown again" in detail and "1 of those 2" in detail


def test_bad_example_counts_are_usage_errors():
    run = CliRunner().invoke(cli, ["bench", "diff", "--examples", "0"])
    assert run.exit_code == 2 and "Traceback" not in run.output
