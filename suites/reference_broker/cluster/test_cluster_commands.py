"""``kconform cluster`` and the ``reference:N`` target: both start a controller and N brokers that a real
client sees as one cluster, and both stop every process they started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from kconform.harness.targets.registry import make_target

from .test_failover import admin

pytestmark = [pytest.mark.slow, pytest.mark.peer]


def test_kconform_cluster_prints_the_cluster_and_stops_it_on_ctrl_c(tmp_path):
    command = [
        sys.executable,
        "-m",
        "kconform.harness.cli",
        "cluster",
        "--brokers",
        "2",
        "--data-dir",
        str(tmp_path),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while not any(line.startswith("broker 2:") for line in lines):
            assert time.monotonic() < deadline and process.poll() is None, "\n".join(lines)
            lines.append(process.stdout.readline().rstrip("\n"))
        bootstrap = next(line.split(": ", 1)[1] for line in lines if line.startswith("bootstrap:"))
        assert sorted(admin(bootstrap).list_topics(timeout=10).brokers) == [1, 2]
        pids = [int(line.split("pid ")[1].split(",")[0].rstrip(")")) for line in lines if "(pid " in line]
        assert len(pids) == 3, lines
    finally:
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=60)
    assert process.returncode == 0, rest
    assert "every node stopped" in rest
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_the_reference_cluster_target_starts_freezes_and_stops_its_nodes():
    target = make_target("reference:2")
    target.start()
    try:
        assert len(target.bootstrap.split(",")) == 2
        assert sorted(admin(target.bootstrap).list_topics(timeout=10).brokers) == [1, 2]
        target.faults.broker_down(2)
        assert target.cluster.node(2).alive()  # frozen, not dead
        target.faults.broker_up(2)
        assert target.alive()
    finally:
        target.stop()
    assert target.cluster is None
