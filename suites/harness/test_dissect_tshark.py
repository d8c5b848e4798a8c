"""The oracle: our capture dissector and Wireshark's Kafka dissector read the same capture of real clients
talking to the reference broker, and must report the same requests and responses.

``kconform capture`` records the broker's port while a session of three independent clients runs:
kafka-python (capped at Kafka 2.6's versions) creates three topics and lists and describes them; kcat
(librdkafka 2.0) produces to two topics, reads one back and consumes both in a consumer group that
commits; confluent-kafka (librdkafka 2.16) produces a few records to the third. Then ``dissect_pcap`` and
``kconform dissect`` (ours) and ``dissect_kafka`` (tshark's, from ``kconform.harness.capture``) read the
file, and the test asserts:

- the same multiset of (API key, version, correlation id) for requests, and for responses; and the same
  capture packet for each, since both report a PDU in the packet that completes it;
- the same topic names, in order, in every request.

Exclusions, with tshark's own reason: tshark 4.0 (Debian bookworm) reads the header of every request but
the body only up to a version per API (Produce v8, Fetch v11, Metadata v9, ApiVersions v3 ...); for a
newer one it raises "Unsupported <API> version. Supports v0-N." and neither reads the topics nor pairs
the response. Those requests still count in the request comparison; their responses and topics are left
out. librdkafka 2.16 speaks such versions (ApiVersions v4, Metadata v12, Produce v10), so the exclusions
must all be confluent-kafka's requests, and few: at most a fifth of the requests."""

from __future__ import annotations

import json
import re
import shutil
import sys
import textwrap
from collections import Counter

import pytest
from click.testing import CliRunner

from kconform.harness.capture import NO_CAPTURE, dissect_kafka, loopback_capture_allowed
from kconform.harness.cli import cli
from kconform.harness.dissect import dissect_pcap
from kconform.reference_broker.process import start_broker_process
from kconform.traces import read_traces

pytestmark = pytest.mark.peer

MODERN = "kconform-modern"  # the confluent-kafka client: the only one tshark 4.0 may not fully read
UNSUPPORTED = re.compile(r"Unsupported (\w+) version\. Supports v0(?:-(\d+))?\.")
UNKNOWN_API = re.compile(r"Unknown (\d+) API key")

SESSION = textwrap.dedent(
    """
    import subprocess, sys
    bootstrap = sys.argv[1]

    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, api_version=(2, 6), client_id="kconform-admin")
    admin.create_topics([NewTopic("orders", 2, 1), NewTopic("audit", 1, 1), NewTopic("events", 1, 1)])
    assert {"orders", "audit", "events"} <= set(admin.list_topics())
    admin.describe_topics(["orders", "audit"])
    admin.close()

    def kcat(*args, stdin=None):
        command = ["kcat", "-b", bootstrap, "-X", "client.id=kconform-kcat", *args]
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    kcat("-P", "-t", "orders", "-K", ":", stdin="".join(f"k{i}:order {i}\\n" for i in range(20)))
    kcat("-P", "-t", "audit", stdin="".join(f"audit {i}\\n" for i in range(5)))
    assert len(kcat("-C", "-t", "orders", "-o", "beginning", "-e", "-q")) == 20
    got = kcat("-G", "kconform-group", "-o", "beginning", "-e", "-q", "orders", "audit")
    assert len(got) == 25, got

    import confluent_kafka
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "client.id": "kconform-modern"})
    for i in range(3):
        producer.produce("events", value=f"event {i}".encode())
    assert producer.flush(30) == 0
"""
)


@pytest.fixture
def broker(tmp_path):
    node = start_broker_process(tmp_path / "data", overrides={"group.initial.rebalance.delay.ms": "0"})
    yield node
    assert node.stop() == 0, "\n".join(node.output[-40:])


def _tshark_reason(pdu) -> str | None:
    """Why tshark could not read a request's body, in its own words (None when it could)."""
    for expert in pdu.experts:
        found = UNSUPPORTED.match(expert.message)
        if found:
            newest = int(found.group(2) or 0)
            assert pdu.api_version > newest, f"tshark says {expert.message} of a v{pdu.api_version} request"
            return expert.message
        if UNKNOWN_API.match(expert.message):
            return expert.message
    return None


def test_dissect_agrees_with_tshark_on_a_real_client_session(broker, tmp_path):
    for tool in ("dumpcap", "tshark", "kcat"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed: run bash ci/install-tools.sh")
    if not loopback_capture_allowed():
        pytest.skip(NO_CAPTURE)
    pcap = tmp_path / "session.pcapng"
    script = tmp_path / "session.py"
    script.write_text(SESSION)
    port = str(broker.port)
    recorded = CliRunner().invoke(
        cli,
        ["capture", "--port", port, "--out", str(pcap), "--", sys.executable, str(script), broker.bootstrap],
    )
    assert recorded.exit_code == 0, recorded.output  # the machine allows capturing: a failure is ours
    where = (
        f"(capture kept at {pcap}: kconform dissect {pcap} --port {port}; "
        f"tshark -r {pcap} -d tcp.port=={port},kafka)"
    )

    ours = dissect_pcap(pcap, [broker.port])
    theirs = dissect_kafka(pcap, broker.port)
    requests = [p for p in theirs.pdus if p.is_request]
    responses = [p for p in theirs.pdus if not p.is_request]
    assert len(requests) >= 40 and ours.exchanges, f"too little traffic {where}"

    # every request: the same header and the same packet, whatever the version
    our_requests = Counter(
        (e.request_packet, e.api_key, e.api_version, e.correlation_id)
        for e in ours.exchanges
        if e.request_packet
    )
    their_requests = Counter((p.frame, p.api_key, p.api_version, p.correlation_id) for p in requests)
    assert our_requests == their_requests, (
        f"requests only we read: {our_requests - their_requests}; only tshark: "
        f"{their_requests - our_requests} {where}"
    )
    assert _triples(our_requests) == _triples(their_requests)

    # the requests tshark cannot read past the header, and why
    excluded = {(p.frame, p.correlation_id): _tshark_reason(p) for p in requests}
    excluded = {key: reason for key, reason in excluded.items() if reason}
    by_request = {(e.request_packet, e.correlation_id): e for e in ours.exchanges if e.request_packet}
    reasons = Counter(excluded.values())
    assert all(by_request[key].client_id == MODERN for key in excluded), (
        f"tshark cannot read requests of a client capped to its versions: {reasons} {where}"
    )
    assert len(excluded) <= len(requests) // 5, (
        f"{len(excluded)} of {len(requests)} requests excluded: {reasons}"
    )

    # every response to a request tshark reads: the same API, version, correlation id and packet
    skipped_responses = {
        (by_request[key].response_packet, key[1]) for key in excluded if by_request[key].response_packet
    }
    our_responses = Counter(
        (e.response_packet, e.api_key, e.api_version, e.correlation_id)
        for e in ours.exchanges
        if e.response_packet and (e.response_packet, e.correlation_id) not in skipped_responses
    )
    their_responses = Counter(
        (p.frame, p.api_key, p.api_version, p.correlation_id)
        for p in responses
        if (p.frame, p.correlation_id) not in skipped_responses
    )
    assert our_responses == their_responses, (
        f"responses only we read: {our_responses - their_responses}; only tshark: "
        f"{their_responses - our_responses} {where}"
    )
    assert _triples(our_responses) == _triples(their_responses)

    # the same topics in every request tshark reads
    compared = 0
    for pdu in requests:
        if (pdu.frame, pdu.correlation_id) in excluded:
            continue
        exchange = by_request[pdu.frame, pdu.correlation_id]
        assert exchange.topics == pdu.topics, (
            f"{exchange.api_name} v{exchange.api_version} correlation id {pdu.correlation_id} in packet "
            f"{pdu.frame}: we read topics {exchange.topics}, tshark {pdu.topics} {where}"
        )
        compared += bool(pdu.topics)
    assert compared >= 15, f"only {compared} requests named topics {where}"
    named = {topic for e in ours.exchanges for topic in e.topics}
    assert {"orders", "audit", "events"} <= named

    # everything we read decoded; what had no answer was cut off by a client closing its connection
    outcomes = Counter(e.outcome for e in ours.exchanges)
    assert set(outcomes) <= {"pass", "closed"} and outcomes["pass"] >= len(ours.exchanges) - 5, (
        f"{outcomes}: {[(e.api_name, e.notes) for e in ours.exchanges if e.outcome != 'pass']} {where}"
    )
    apis = {e.api_name for e in ours.exchanges}
    assert {
        "ApiVersions",
        "Metadata",
        "CreateTopics",
        "Produce",
        "Fetch",
        "ListOffsets",
        "FindCoordinator",
        "JoinGroup",
        "SyncGroup",
        "OffsetCommit",
    } <= apis, sorted(apis)

    # and the command says the same, and writes one trace row per exchange
    run = tmp_path / "run"
    shown = CliRunner().invoke(cli, ["dissect", str(pcap), "-p", port, "--out", str(run), "--format", "json"])
    assert shown.exit_code == 0, shown.output
    summary = json.loads(shown.stdout)
    assert summary["exchanges"] == len(ours.exchanges) and summary["outcomes"] == dict(outcomes)
    rows = read_traces(run)
    assert rows.num_rows == len(ours.exchanges)
    assert set(rows["target"].to_pylist()) == {f"capture:{broker.bootstrap}"}
    print(
        f"\nagreed with tshark: {len(requests)} requests, {sum(their_responses.values())} responses, topics "
        f"of {compared} requests; excluded {len(excluded)} ({dict(reasons)})"
    )


def _triples(counter: Counter) -> Counter:
    out: Counter = Counter()
    for (_, key, version, correlation_id), count in counter.items():
        out[key, version, correlation_id] += count
    return out
