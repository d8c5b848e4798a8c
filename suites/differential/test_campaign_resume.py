"""A campaign killed mid-run (SIGKILL) leaves readable traces, and ``kconform diff --resume`` continues
the same run: same run id, its traces appended to with no gap and no duplicate."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from click.testing import CliRunner

from kconform.harness.cli import cli
from kconform.traces import read_traces


def test_a_killed_campaign_keeps_its_traces_and_resumes(tmp_path):
    out = tmp_path / "run"
    args = [sys.executable, "-m", "kconform.harness.cli", "diff", "--a", "reference", "--b", "reference",
            "--examples", "100000", "--no-shrink", "--out", str(out)]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(list((out / "traces").glob("part-*.parquet"))) < 2:  # two row groups on disk
            assert process.poll() is None, "the campaign ended early"
            assert time.monotonic() < deadline, "the campaign wrote no traces"
            time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    before = read_traces(out)
    run_id = json.loads((out / "run.json").read_text())["run_id"]
    assert before.num_rows >= 4000 and set(before["run_id"].to_pylist()) == {run_id}
    assert sorted(before["seq"].to_pylist()) == list(range(before.num_rows))

    result = CliRunner().invoke(cli, ["diff", "--a", "reference", "--b", "reference", "--examples", "30",
                                      "--no-shrink", "--resume", "--out", str(out)])
    assert result.exit_code == 0, result.output  # two unmodified brokers: no difference
    after = read_traces(out)
    assert set(after["run_id"].to_pylist()) == {run_id}
    assert after.num_rows > before.num_rows
    assert sorted(after["seq"].to_pylist()) == list(range(after.num_rows))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run_id"] == run_id and summary["cases"] == 30
    new_cases = set(after["case_id"].to_pylist()) - set(before["case_id"].to_pylist())
    assert new_cases and all("s1c" in case for case in new_cases)  # the second segment's cases
