"""Real consumer groups against the reference broker: confluent-kafka (eager range and incremental
cooperative-sticky), kafka-python and aiokafka members, each in its own process, join, leave and are
killed; at every settled generation each partition has exactly one owner, and after the whole group
restarts consumption resumes exactly at the committed offsets."""

from __future__ import annotations

import asyncio
import json
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kconform.codecs.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerProtocolAssignment,
    DescribeGroupsRequest,
    OffsetFetchRequest,
)
from kconform.reference_broker.process import start_broker_process

from ...support.rawclient import RawClient

pytestmark = [pytest.mark.peer, pytest.mark.slow]

MEMBER_SCRIPT = Path(__file__).parents[2] / "support" / "group_member.py"
TOPIC, PARTITIONS, GROUP = "events", 6, "workers"
FAST = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
    "offsets.topic.num.partitions": "10",
    "group.consumer.session.timeout.ms": "2000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "300",
}


class Member:
    def __init__(self, library: str, broker, tmp: Path, name: str, strategy: str = "") -> None:
        self.name = name
        self.log = tmp / f"{name}.jsonl"
        self.stop_file = tmp / f"{name}.stop"
        args = [sys.executable, str(MEMBER_SCRIPT), library, broker.bootstrap, GROUP, TOPIC, str(self.log)]
        self.stderr = tmp / f"{name}.stderr"
        with open(self.stderr, "w") as errors:  # a file, not a pipe: a full pipe would stall the member
            self.process = subprocess.Popen(
                args + [str(self.stop_file), strategy], stdout=subprocess.DEVNULL, stderr=errors
            )

    def events(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.endswith("}")]

    def owned(self) -> set[int]:
        owned: set[int] = set()
        for e in self.events():
            if e["event"] == "assign":
                owned |= set(e["partitions"])
            elif e["event"] in ("revoke", "lost"):
                owned -= set(e["partitions"])
        return owned

    def stop(self) -> None:
        self.stop_file.touch()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError(f"{self.name} did not leave in time") from None
        assert self.process.returncode == 0, self.stderr.read_text()[-3000:]

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


def wait_for(what: str, predicate, timeout: float = 45.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def described(broker) -> tuple[str, dict[str, set[int]]]:
    """The group's state and each member's partitions, as the coordinator hands them out."""

    async def ask():
        async with await RawClient.connect(broker.host, broker.port) as client:
            return (await client.call(15, 5, DescribeGroupsRequest(groups=[GROUP]))).groups[0]

    group = asyncio.run(ask())
    owners = {}
    for m in group.members:
        data = bytes(m.member_assignment)
        parts: set[int] = set()
        if len(data) >= 2:
            version = min(struct.unpack_from(">h", data)[0], 3)
            assignment, _ = ConsumerProtocolAssignment.decode_lenient(data[2:], version)
            parts = {p for tp in assignment.assigned_partitions if tp.topic == TOPIC for p in tp.partitions}
        owners[m.member_id] = parts
    return group.group_state, owners


def described_consumer_group(broker) -> tuple[str, dict[str, set[int]]]:
    """The same for a KIP-848 group, through ConsumerGroupDescribe."""

    async def ask():
        async with await RawClient.connect(broker.host, broker.port) as client:
            return (await client.call(69, 0, ConsumerGroupDescribeRequest(group_ids=[GROUP]))).groups[0]

    group = asyncio.run(ask())
    owners = {
        m.member_id: {
            p for tp in m.assignment.topic_partitions if tp.topic_name == TOPIC for p in tp.partitions
        }
        for m in group.members
    }
    return group.group_state, owners


def settled(broker, members: list[Member], count: int, protocol: str = "classic"):
    """True once the group is Stable with ``count`` members whose partitions are disjoint and cover
    the topic, and the live members' own views agree."""
    state, owners = described_consumer_group(broker) if protocol == "consumer" else described(broker)
    if state != "Stable" or len(owners) != count:
        return False
    everyone = [p for parts in owners.values() for p in parts]
    if sorted(everyone) != list(range(PARTITIONS)):
        return False
    views = sorted(sorted(m.owned()) for m in members)
    return views == sorted(sorted(parts) for parts in owners.values()) and owners


def committed(broker) -> dict[int, int]:
    async def ask():
        async with await RawClient.connect(broker.host, broker.port) as client:
            request = OffsetFetchRequest(
                group_id=GROUP,
                topics=[
                    OffsetFetchRequest.OffsetFetchRequestTopic(
                        name=TOPIC, partition_indexes=list(range(PARTITIONS))
                    )
                ],
            )
            body = await client.call(9, 7, request)
            return {p.partition_index: p.committed_offset for p in body.topics[0].partitions}

    return asyncio.run(ask())


def produce(broker, start: int, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(start, start + count):
        producer.produce(TOPIC, str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def consumed(members: list[Member]) -> list[tuple[str, int, int, str]]:
    return [(m.name, e["p"], e["o"], e["v"]) for m in members for e in m.events() if e["event"] == "consumed"]


def run_group_scenario(library: str, tmp_path: Path, strategy: str = "") -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = start_broker_process(tmp_path / "data", overrides=FAST)
    protocol = "consumer" if strategy == "consumer" else "classic"
    everyone: list[Member] = []
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(15)
        produce(broker, 0, 120)

        first = [Member(library, broker, tmp_path, f"a{i}", strategy) for i in range(3)]
        everyone += first
        wait_for("three members to settle", lambda: settled(broker, first, 3, protocol))

        leave_time = time.time()
        first[0].stop()
        wait_for("two members to settle after a leave", lambda: settled(broker, first[1:], 2, protocol))
        if strategy in ("cooperative-sticky", "consumer"):
            # Incremental rebalancing: the members that stay keep what they had, nothing is revoked.
            for survivor in first[1:]:
                revoked = [e for e in survivor.events() if e["event"] == "revoke" and e["t"] > leave_time]
                assert all(not e["partitions"] for e in revoked), (survivor.name, revoked)

        first[1].kill()
        wait_for("the last member to own every partition", lambda: settled(broker, first[2:], 1, protocol))
        produce(broker, 120, 120)
        wait_for(
            "everything so far consumed",
            lambda: {v for *_, v in consumed(everyone)} >= {str(i) for i in range(240)},
        )
        first[2].stop()
        before_restart = committed(broker)
        assert before_restart == dict.fromkeys(range(PARTITIONS), 40), before_restart

        produce(broker, 240, 60)
        second = [Member(library, broker, tmp_path, f"b{i}", strategy) for i in range(3)]
        everyone += second
        wait_for("the restarted group to settle", lambda: settled(broker, second, 3, protocol))
        wait_for(
            "everything consumed", lambda: {v for *_, v in consumed(everyone)} >= {str(i) for i in range(300)}
        )
        for member in second:
            member.stop()
        after = committed(broker)
    except BaseException:
        (tmp_path / "broker.log").write_text("\n".join(broker.output))
        raise
    finally:
        for member in everyone:
            if member.process.poll() is None:
                member.kill()
        broker.stop()

    # Nothing skipped, nothing re-read beyond work a killed member had not committed.
    records = consumed(everyone)
    commits = {(m.name, e["p"], e["o"]) for m in everyone for e in m.events() if e["event"] == "committed"}
    seen: dict[tuple[int, int], list[str]] = {}
    for name, p, o, _ in records:
        seen.setdefault((p, o), []).append(name)
    assert len(seen) == 300
    for (p, o), names in seen.items():
        if len(names) > 1:
            uncommitted = [n for n in names[:-1] if (n, p, o + 1) not in commits]
            assert uncommitted, (
                f"partition {p} offset {o} was consumed again by {names} after being committed"
            )
    # The restarted group starts exactly at the committed offsets.
    for p in range(PARTITIONS):
        firsts = [o for name, q, o, _ in records if q == p and name.startswith("b")]
        assert min(firsts) == before_restart[p], (p, min(firsts), before_restart[p])
    assert after == dict.fromkeys(range(PARTITIONS), 50)


def test_confluent_kafka_group(tmp_path):
    run_group_scenario("confluent", tmp_path)


def test_confluent_kafka_cooperative_sticky_group(tmp_path):
    run_group_scenario("confluent", tmp_path, "cooperative-sticky")


def test_kafka_python_group(tmp_path):
    run_group_scenario("kafka-python", tmp_path)


def test_aiokafka_group(tmp_path):
    run_group_scenario("aiokafka", tmp_path)


def test_confluent_kafka_consumer_protocol_group(tmp_path):
    """KIP-848: ``group.protocol=consumer``, the assignment computed by the broker."""
    run_group_scenario("confluent", tmp_path, "consumer")
