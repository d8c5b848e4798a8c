"""A capture of a three-broker cluster's whole life (registration, heartbeats, the metadata log's fetches,
replica fetches, ISR changes, forwarded topic creation, a client producing with acks=all and consuming
as a group) dissects with every frame decoded by the project's own dissector (``kconform dissect``),
inter-broker APIs included; the only unanswered requests are those a stopping node cut (long polls, and
a new connection's ApiVersions)."""

from __future__ import annotations

import shutil
import time
from collections import Counter

import pytest

from kconform.harness.capture import capture_tcp_port
from kconform.harness.dissect import dissect_pcap
from kconform.harness.ports import free_ports
from kconform.reference_broker.cluster_processes import start_cluster

from .test_failover import FAST, create_topic, produce, read_all

pytestmark = [pytest.mark.slow, pytest.mark.peer]

INTER_BROKER = {
    62: "BrokerRegistration",
    63: "BrokerHeartbeat",
    56: "AlterPartition",
    58: "Envelope",
    60: "DescribeCluster",
    67: "AllocateProducerIds",
}


def test_a_clusters_traffic_dissects_with_every_frame_decoded(tmp_path):
    if shutil.which("dumpcap") is None:
        pytest.fail("dumpcap missing: run bash ci/install-tools.sh")
    ports = dict(enumerate(free_ports(4)))
    pcap = tmp_path / "cluster.pcapng"
    with capture_tcp_port(ports[0], pcap, more_ports=[ports[n] for n in (1, 2, 3)]):
        cluster = start_cluster(tmp_path / "data", 3, overrides=FAST, ports=ports)
        try:
            create_topic(cluster.bootstrap)
            acked = produce(cluster.bootstrap, 0, 200)
            cluster.node(3).freeze()  # an ISR shrink and, after the thaw, an expansion: AlterPartition
            time.sleep(3.5)
            cluster.node(3).thaw()
            time.sleep(3)
            stored = read_all(cluster.bootstrap)
        finally:
            cluster.stop()
    assert sum(map(len, acked.values())) == 200
    assert sum(map(len, stored.values())) >= 200
    capture = dissect_pcap(pcap, list(ports.values()))
    undecoded = [e for e in capture.exchanges if e.outcome not in ("pass", "closed", "timeout")]
    assert undecoded == [], [(e.api_name, e.api_version, e.outcome, e.notes) for e in undecoded[:5]]
    assert not [n for n in capture.notes if "decode" in n.text], capture.notes[:5]
    answered = Counter(e.api_key for e in capture.exchanges if e.outcome == "pass")
    missing = {name for key, name in INTER_BROKER.items() if not answered[key]}
    assert not missing, f"no {sorted(missing)} in the capture"
    # followers fetching from leaders, and brokers fetching the metadata log from the controller
    replica_fetches = [
        e for e in capture.exchanges if e.api_key == 1 and e.client_id and "replica" in e.client_id
    ]
    assert replica_fetches, "no replica fetches"
    # cut by a stopping node: long polls, and the first request (ApiVersions) of a connection a peer
    # or client opened to it as it stopped
    cut = [e for e in capture.exchanges if e.outcome != "pass"]
    assert all(e.api_key in (1, 63, 3, 10, 12, 18) for e in cut), [(e.api_name, e.outcome) for e in cut]
