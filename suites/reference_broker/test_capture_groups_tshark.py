"""Wireshark's Kafka dissector reads a consumer-group session with the reference broker: FindCoordinator,
JoinGroup, SyncGroup, Heartbeat, OffsetCommit, OffsetFetch and LeaveGroup, each answered once and in
order, with no error-level expert info, and with the group id and member id tshark reads matching what
the client used.

kafka-python with ``api_version=(2, 3)`` keeps every group API at a version Debian's tshark 4.0 dissects
(newer ones are flexible versions this dissector does not read)."""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from collections import defaultdict

import pytest

from kconform.harness.capture import NO_CAPTURE, capture_tcp_port, dissect_kafka, loopback_capture_allowed
from kconform.reference_broker.process import start_broker_process

pytestmark = pytest.mark.peer

CAP = (2, 3)
GROUP_APIS = {10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup"}
OFFSET_APIS = {8: "OffsetCommit", 9: "OffsetFetch"}


@pytest.fixture
def broker(tmp_path):
    node = start_broker_process(tmp_path / "data", overrides={"group.initial.rebalance.delay.ms": "0"})
    yield node
    assert node.stop() == 0, "\n".join(node.output[-40:])


def _group_session(bootstrap: str, topic: str, group: str) -> str:
    """Produce, consume in a group with commits and heartbeats, leave; returns the member id."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, api_version=CAP)
    admin.create_topics([NewTopic(topic, 2, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=CAP)
    for i in range(20):
        producer.send(topic, f"v{i}".encode())
    producer.flush(30)
    producer.close(10)
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        api_version=CAP,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        heartbeat_interval_ms=200,
        session_timeout_ms=6000,
    )
    got, deadline = 0, time.monotonic() + 30
    while got < 20 and time.monotonic() < deadline:
        got += sum(len(r) for r in consumer.poll(500).values())
        consumer.commit()
    time.sleep(0.6)  # a few heartbeats of the settled member
    member_id = consumer._coordinator._generation.member_id
    consumer.close()
    assert got == 20
    return member_id


def test_tshark_reads_a_consumer_group_session(broker, tmp_path):
    for tool in ("dumpcap", "tshark"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed: run bash ci/install-tools.sh")
    if not loopback_capture_allowed():
        pytest.skip(NO_CAPTURE)
    pcap = tmp_path / "groups.pcapng"
    topic, group = f"capture-{uuid.uuid4().hex[:8]}", f"group-{uuid.uuid4().hex[:8]}"
    with capture_tcp_port(broker.port, pcap):  # CaptureUnavailable here is a failure: the machine allows it
        member_id = _group_session(broker.bootstrap, topic, group)
    dissection = dissect_kafka(pcap, broker.port)
    where = f"(capture kept at {pcap}; open it with: tshark -r {pcap} -d tcp.port=={broker.port},kafka)"

    requests = [p for p in dissection.pdus if p.is_request]
    seen = {p.api_key for p in requests}
    missing = sorted(name for key, name in {**GROUP_APIS, **OFFSET_APIS}.items() if key not in seen)
    assert not missing, f"no {missing} request in the capture {where}"

    by_stream: dict[int, tuple[list, list]] = defaultdict(lambda: ([], []))
    for pdu in dissection.pdus:
        by_stream[pdu.stream][0 if pdu.is_request else 1].append(pdu)
    for stream, (asked, answered) in sorted(by_stream.items()):
        assert [p.correlation_id for p in answered] == [p.correlation_id for p in asked], (
            f"stream {stream} {where}"
        )
        for request, response in zip(asked, answered, strict=True):
            assert (response.api_key, response.api_version) == (request.api_key, request.api_version)

    errors = dissection.at_severity("error")
    assert not errors, f"tshark error-level expert infos: {errors[:10]} {where}"
    unsupported = [
        e
        for p in requests
        for e in p.experts
        if e.severity == "warning" and e.message.startswith("Unsupported ")
    ]
    assert not unsupported, f"requests tshark cannot dissect: {unsupported[:5]}; lower CAP {where}"

    fields = subprocess.run(
        [
            "tshark",
            "-r",
            str(pcap),
            "-d",
            f"tcp.port=={broker.port},kafka",
            "-T",
            "fields",
            "-e",
            "kafka.api_key",
            "-e",
            "kafka.consumer_group",
            "-e",
            "kafka.member_id",
            "-Y",
            "kafka.consumer_group",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.splitlines()
    groups = {line.split("\t")[1] for line in fields if line.count("\t") >= 2}
    members = {m for line in fields if line.count("\t") >= 2 for m in line.split("\t")[2].split(",") if m}
    assert groups == {group}, f"tshark read group ids {groups} {where}"
    assert member_id in members, f"tshark did not read member id {member_id}: {sorted(members)[:5]} {where}"
