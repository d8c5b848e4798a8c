"""librdkafka 2.16 (confluent-kafka) against the broker answering as Kafka 4.1 and 4.3: it picks the
newest versions both sides have (Metadata v13, the newest Produce and Fetch), and a capture of the
whole session dissects with every frame decoded by the codecs, requests and responses alike.

A librdkafka session used to leave 17 of 278 frames undecodable (Metadata v13 was missing from the
codecs); this test captures such a session and asserts none are left."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from collections import defaultdict

import pytest

from kconform.codecs import api_schema
from kconform.harness.capture import capture_tcp_port
from kconform.harness.dissect import dissect_pcap
from kconform.reference_broker.process import start_broker_process

pytestmark = pytest.mark.peer

METADATA, PRODUCE, FETCH, API_VERSIONS = 3, 0, 1, 18

SESSION = textwrap.dedent(
    """
    import sys
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap, topic = sys.argv[1], sys.argv[2]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                         "compression.type": "lz4", "linger.ms": 20})
    acked = []
    for i in range(200):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i,
                         on_delivery=lambda err, msg: acked.append(err is None))
    assert producer.flush(30) == 0 and len(acked) == 200 and all(acked)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "capture", "auto.offset.reset":
                         "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen = 0
    for _ in range(200):
        for message in consumer.consume(200, 1.0):
            assert message.error() is None, message.error()
            seen += 1
        if seen >= 200:
            break
    assert seen == 200, seen
    consumer.commit(asynchronous=False)
    consumer.close()
    print(confluent_kafka_version())
    """
).replace(
    "print(confluent_kafka_version())", "import confluent_kafka; print(confluent_kafka.libversion()[0])"
)


@pytest.mark.parametrize("release", ["4.1", "4.3"])
def test_librdkafka_session_uses_the_newest_versions_and_every_frame_decodes(release, tmp_path):
    if shutil.which("dumpcap") is None:
        pytest.fail("dumpcap missing: run bash ci/install-tools.sh")
    node = start_broker_process(tmp_path / "data", kafka_version=release)
    pcap = tmp_path / "session.pcapng"
    try:
        with capture_tcp_port(node.port, pcap):
            done = subprocess.run(
                [sys.executable, "-c", SESSION, node.bootstrap, "current"],
                capture_output=True,
                text=True,
                timeout=120,
            )
        assert done.returncode == 0, done.stderr[-3000:]
    finally:
        node.stop()
    librdkafka = done.stdout.strip().splitlines()[-1]
    assert librdkafka.startswith("2."), librdkafka
    capture = dissect_pcap(pcap, [node.port])
    assert capture.exchanges, "nothing captured"
    # every frame decoded: no exchange the codecs could not read; "closed" are requests the client
    # left outstanding when it closed (a long-polling Fetch, a coordinator lookup at shutdown)
    undecoded = [e for e in capture.exchanges if e.outcome not in ("pass", "closed")]
    assert undecoded == [], [(e.api_name, e.api_version, e.outcome, e.notes) for e in undecoded[:5]]
    # how many requests are outstanding at close varies with timing; what may not vary is that a broker
    # answers a connection's requests in order, so an unanswered one is never followed by an answer
    assert _answered_after_an_unanswered(capture.exchanges) == []
    assert not [n for n in capture.notes if "decode" in n.text], capture.notes[:5]
    used: dict[int, set[int]] = defaultdict(set)
    for exchange in capture.exchanges:
        used[exchange.api_key].add(exchange.api_version)
    # librdkafka asks ApiVersions at v3 (its newest), then takes the newest version both sides have:
    # its own newest are Produce v10, Fetch v16 and Metadata v13 (2.16's rdkafka_request.c), all of
    # which the broker serves as 4.1 and 4.3 (the codecs used to lack Metadata v13)
    assert max(used[API_VERSIONS]) == 3
    for api_key, top in {PRODUCE: 10, FETCH: 16, METADATA: 13}.items():
        if librdkafka.startswith("2.16."):
            assert max(used[api_key]) == top, (api_schema(api_key).name, sorted(used[api_key]))
        else:  # a newer librdkafka may go further, never back
            assert max(used[api_key]) >= top, (api_schema(api_key).name, sorted(used[api_key]))
    print(
        f"librdkafka {librdkafka} at Kafka {release}: {len(capture.exchanges)} exchanges, versions",
        {api_schema(k).name: sorted(v) for k, v in sorted(used.items())},
    )


def _answered_after_an_unanswered(exchanges) -> list:
    """Exchanges answered on a connection after an earlier request on it was left unanswered."""
    by_connection: dict[tuple[str, str], list] = defaultdict(list)
    for exchange in exchanges:
        if exchange.request_packet is not None:
            by_connection[exchange.client, exchange.server].append(exchange)
    out_of_order = []
    for on_connection in by_connection.values():
        unanswered = False
        for exchange in sorted(on_connection, key=lambda e: e.request_packet):
            if exchange.outcome == "closed":
                unanswered = True
            elif unanswered:
                out_of_order.append((exchange.api_name, exchange.correlation_id))
    return out_of_order
