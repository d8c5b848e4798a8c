"""A campaign killed mid-run (SIGKILL) leaves readable traces, and ``kconform diff --resume`` finishes
that run: same run id and cases, no case run twice or lost, and summary.json agreeing with the traces."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter

from click.testing import CliRunner

from kconform.harness.cli import cli
from kconform.traces import read_traces

EXAMPLES = 700  # the first trace part is written after about 300 cases: killed well before the end


def test_a_killed_campaign_keeps_its_traces_and_resume_finishes_it(tmp_path):
    out = tmp_path / "run"
    args = [sys.executable, "-m", "kconform.harness.cli", "diff", "--a", "reference", "--b", "reference",
            "--examples", str(EXAMPLES), "--no-shrink", "--out", str(out)]  # fmt: skip
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not list((out / "traces").glob("part-*.parquet")):
            assert process.poll() is None, "the campaign ended before it wrote a trace part"
            assert time.monotonic() < deadline, "the campaign wrote no traces"
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    before = read_traces(out)
    run_id = json.loads((out / "run.json").read_text())["run_id"]
    assert before.num_rows >= 2000 and set(before["run_id"].to_pylist()) == {run_id}
    cases_before = set(before["case_id"].to_pylist())
    assert len(cases_before) < EXAMPLES

    # other --examples and --seed are ignored: the run in --out is finished as it was started
    again = ["diff", "--a", "reference", "--b", "reference", "--examples", "5", "--seed", "9", "--no-shrink"]
    result = CliRunner().invoke(cli, [*again, "--resume", "--out", str(out)])
    assert result.exit_code == 0, result.output  # two unmodified brokers: no difference
    after = read_traces(out)
    assert set(after["run_id"].to_pylist()) == {run_id}
    assert sorted(after["seq"].to_pylist()) == list(range(after.num_rows))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run_id"] == run_id and summary["cases"] == EXAMPLES
    journal = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    drawn = [r for r in journal if not r.get("opening")]  # and the opening case, on the fresh targets
    assert len(journal) == EXAMPLES + 1 and len({r["case"] for r in drawn}) == EXAMPLES
    rows_per_case = Counter(after["case_id"].to_pylist())
    # every case's rows are there exactly once (two rows a compared pair), none from a case run twice
    assert rows_per_case == Counter({r["case"]: 2 * r["pairs"] for r in journal if r["pairs"]})
    assert summary["pairs_compared"] * 2 == after.num_rows
    assert cases_before < set(rows_per_case)  # the cases on disk were kept, not run again


def test_resume_needs_the_run_directory_and_bad_counts_are_usage_errors(tmp_path):
    runner = CliRunner()
    for args in (["--examples", "0"], ["--examples", "-1"], ["--resume"], ["--apis", "NoSuchApi"]):
        result = runner.invoke(cli, ["diff", *args])
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output and "Error" in result.output
    unreachable = runner.invoke(cli, ["diff", "--a", "bootstrap:127.0.0.1:1", "--out", str(tmp_path)])
    assert unreachable.exit_code == 2 and "Traceback" not in unreachable.output, unreachable.output
