"""Wireshark's Kafka dissector as an independent reader of the reference broker's bytes on the wire.

dumpcap records the loopback traffic of a broker process while a kafka-python session creates a topic,
produces with acks=all under every compression codec, then seeks to the beginning (ListOffsets) and
fetches everything back. tshark then dissects the capture, and the test asserts that it finds the Kafka
PDUs it should (ApiVersions, Metadata, CreateTopics, Produce, ListOffsets, Fetch), that every request is
answered once, in order, on its own connection, with its correlation id, that tshark decompresses
every batch and reads back every value produced, and that it raises no error-level expert info (nor any
Kafka warning except the expected ones below).

Version cap: kafka-python with ``api_version=(2, 6)``. Debian bookworm's tshark 4.0 dissects
ApiVersions v0-3, Metadata v0-9, CreateTopics v0-5, InitProducerId v0-3, Produce v0-8, ListOffsets v0-5
and Fetch v0-11 (it says so itself: a newer version gets "Unsupported <API> version. Supports v0-N" and
undecoded or malformed PDUs). kafka-python still asks ApiVersions and then uses the lower of the
broker's range and its table for Kafka 2.6, which gives exactly those maxima; its 2.7 table would send
Fetch v12 (the first flexible Fetch), which this tshark cannot read. kafka-python, not kcat, because
one client has to create the topic too (kcat cannot), and its cap is a table we can read, so every
request version is known in advance. The only warnings allowed are tshark's remarks on the broker's
ApiVersions response, which advertises versions (and API keys) newer than the dissector knows."""

from __future__ import annotations

import shutil
import time
import uuid
from collections import defaultdict

import pytest

from kconform.harness.capture import NO_CAPTURE, capture_tcp_port, dissect_kafka, loopback_capture_allowed
from kconform.reference_broker.process import start_broker_process

pytestmark = pytest.mark.peer

CAP = (2, 6)
# the newest version of each API the session uses that tshark 4.0's Kafka dissector reads
TSHARK_KNOWS = {0: 8, 1: 11, 2: 5, 3: 9, 18: 3, 19: 5, 22: 3}
EXPECTED_APIS = {
    18: "ApiVersions",
    3: "Metadata",
    19: "CreateTopics",
    0: "Produce",
    2: "ListOffsets",
    1: "Fetch",
}
CODECS = {None: 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
PER_CODEC = 20
PARTITIONS = 2


@pytest.fixture
def broker(tmp_path):
    node = start_broker_process(tmp_path / "data")
    yield node
    assert node.stop() == 0, "\n".join(node.output[-40:])


def _kafka_python_session(bootstrap: str, topic: str) -> list[bytes]:
    """Create, produce under every codec, read back; returns the values produced."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, api_version=CAP, client_id="kconform-capture")
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    admin.close()
    sent: list[bytes] = []
    for codec in CODECS:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap, api_version=CAP, acks="all", compression_type=codec, linger_ms=50
        )
        values = [f"{codec}-{i}|".encode() + b"kconform capture " * 16 for i in range(PER_CODEC)]
        futures = [producer.send(topic, key=f"k{i}".encode(), value=v) for i, v in enumerate(values)]
        producer.flush(30)
        for future in futures:
            future.get(30)
        producer.close(10)
        sent += values
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        api_version=CAP,
        group_id=None,
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < len(sent) and time.monotonic() < deadline:
        for records in consumer.poll(500).values():
            got += [r.value for r in records]
    time.sleep(0.5)  # the fetch sent ahead at the end of the last poll gets its answer before the close
    consumer.close()
    assert sorted(got) == sorted(sent), f"kafka-python read back {len(got)} of {len(sent)} records"
    return sent


def test_tshark_reads_a_client_session(broker, tmp_path):
    for tool in ("dumpcap", "tshark"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed: run bash ci/install-tools.sh")
    if not loopback_capture_allowed():
        pytest.skip(NO_CAPTURE)
    pcap = tmp_path / "session.pcapng"
    topic = f"capture-{uuid.uuid4().hex[:8]}"
    with capture_tcp_port(broker.port, pcap):  # CaptureUnavailable here is a failure: the machine allows it
        sent = _kafka_python_session(broker.bootstrap, topic)
    dissection = dissect_kafka(pcap, broker.port)
    where = f"(capture kept at {pcap}; open it with: tshark -r {pcap} -d tcp.port=={broker.port},kafka)"

    requests = [p for p in dissection.pdus if p.is_request]
    responses = [p for p in dissection.pdus if not p.is_request]
    assert requests and responses, f"tshark found no Kafka PDUs {where}"
    seen = {p.api_key for p in requests}
    missing = {name for key, name in EXPECTED_APIS.items() if key not in seen}
    assert not missing, f"no {sorted(missing)} request in the capture {where}"
    beyond = sorted(
        {(p.api_key, p.api_version) for p in requests if p.api_version > TSHARK_KNOWS.get(p.api_key, -1)}
    )
    assert not beyond, f"requests beyond what tshark 4.0 dissects: {beyond}; lower CAP {where}"

    # every request answered once, in order, on its own connection, with its correlation id
    by_stream: dict[int, tuple[list, list]] = defaultdict(lambda: ([], []))
    for pdu in dissection.pdus:
        by_stream[pdu.stream][0 if pdu.is_request else 1].append(pdu)
    for stream, (asked, answered) in sorted(by_stream.items()):
        ids = [p.correlation_id for p in asked]
        assert len(set(ids)) == len(ids), f"stream {stream}: correlation ids reused {ids} {where}"
        assert [p.correlation_id for p in answered] == ids, (
            f"stream {stream}: responses {[p.correlation_id for p in answered]} for requests {ids} {where}"
        )
        for request, response in zip(asked, answered, strict=True):
            assert response.frame > request.frame and response.matched_frame == request.frame, (
                f"stream {stream}: tshark pairs the response in frame {response.frame} with frame "
                f"{response.matched_frame}, not with the request in frame {request.frame} {where}"
            )
            assert (response.api_key, response.api_version) == (request.api_key, request.api_version)

    errors = dissection.at_severity("error")
    assert not errors, f"tshark error-level expert infos: {errors[:10]} {where}"
    expected = {
        id(e)
        for p in responses
        if p.api_key == 18
        for e in p.experts
        if e.severity == "warning" and e.message.startswith(("Unsupported ", "Unknown "))
    }
    warnings = [
        e for e in dissection.at_severity("warning") if e.protocol == "kafka" and id(e) not in expected
    ]
    assert not warnings, f"tshark Kafka warnings: {warnings[:10]} {where}"

    produced = [p for p in requests if p.api_key == 0]
    fetched = [p for p in responses if p.api_key == 1]
    for name, pdus in (("Produce requests", produced), ("Fetch responses", fetched)):
        codecs = {c for p in pdus for c in p.batch_codecs}
        absent = sorted(str(c) for c, n in CODECS.items() if n not in codecs)
        assert not absent, f"tshark found no {absent} batches in the {name} {where}"
        values = {v for p in pdus for v in p.record_values}
        unread = [v for v in sent if v not in values]
        assert not unread, f"tshark did not read {len(unread)} produced values in the {name}: {unread[:3]}"
