"""librdkafka's mock cluster, from the librdkafka that ships inside the confluent-kafka wheel.

The mock cluster is an in-process Kafka imitation with real TCP listeners, driven here through ctypes
and librdkafka's public ``rd_kafka_mock_*`` functions (``rdkafka_mock.h``): it needs a librdkafka handle
to live in, then serves any client on its bootstrap addresses. Its fault hooks (request errors, broker
down/up, round-trip time, leader moves) are exposed as methods."""

from __future__ import annotations

import ctypes
import glob
import os
from pathlib import Path

__all__ = ["RdkafkaMockCluster", "find_librdkafka"]

_RD_KAFKA_PRODUCER = 0


def find_librdkafka() -> Path:
    """The librdkafka shared library bundled with confluent-kafka."""
    import confluent_kafka

    site = Path(confluent_kafka.__file__).resolve().parent.parent
    candidates = sorted(glob.glob(str(site / "confluent_kafka.libs" / "librdkafka*.so*")))
    if not candidates:
        raise RuntimeError(
            "librdkafka was not found beside confluent-kafka; install the confluent-kafka wheel "
            "(pip install 'kconform[peers]')"
        )
    return Path(candidates[0])


def _load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path), mode=getattr(os, "RTLD_LOCAL", 0))
    p, i, c = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
    signatures = {
        "rd_kafka_conf_new": (p, []),
        "rd_kafka_conf_set": (i, [p, c, c, c, ctypes.c_size_t]),
        "rd_kafka_new": (p, [i, p, c, ctypes.c_size_t]),
        "rd_kafka_destroy": (None, [p]),
        "rd_kafka_mock_cluster_new": (p, [p, i]),
        "rd_kafka_mock_cluster_destroy": (None, [p]),
        "rd_kafka_mock_cluster_bootstraps": (c, [p]),
        "rd_kafka_mock_topic_create": (i, [p, c, i, i]),
        "rd_kafka_mock_broker_set_down": (i, [p, ctypes.c_int32]),
        "rd_kafka_mock_broker_set_up": (i, [p, ctypes.c_int32]),
        "rd_kafka_mock_broker_set_rtt": (i, [p, ctypes.c_int32, i]),
        "rd_kafka_mock_partition_set_leader": (i, [p, c, ctypes.c_int32, ctypes.c_int32]),
        "rd_kafka_mock_broker_set_host_port": (i, [p, ctypes.c_int32, c, i]),
        "rd_kafka_mock_push_request_errors_array": (None, [p, ctypes.c_int16, ctypes.c_size_t, p]),
        "rd_kafka_mock_group_initial_rebalance_delay_ms": (None, [p, ctypes.c_int32]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


# Reference-client settings this cluster needs. It advertises group API versions it cannot serve, so a
# Java-like client that picks the highest common version cannot stay in a group: it closes the connection
# on JoinGroup v6 and SyncGroup v4 (the first flexible versions) and answers LeaveGroup v3 and v4 in a
# shape neither version has. suites/client/test_consumer_live.py pins each of these.
CLIENT_SETTINGS = {"kconform.api.version.max": "JoinGroup=5,SyncGroup=3,LeaveGroup=2"}


def broker_addresses(bootstraps: str) -> dict[int, tuple[str, int]]:
    """Where each mock broker listens: its bootstrap list holds them in broker id order, from 1."""
    addresses = {}
    for number, address in enumerate(bootstraps.split(","), start=1):
        host, _, port = address.strip().rpartition(":")
        addresses[number] = (host, int(port))
    return addresses


class RdkafkaMockCluster:
    """``with RdkafkaMockCluster(brokers=1) as mock: mock.bootstrap ...``"""

    client_settings = CLIENT_SETTINGS

    def __init__(self, brokers: int = 1, *, library: Path | None = None) -> None:
        self._lib = _load(library or find_librdkafka())
        errstr = ctypes.create_string_buffer(512)
        conf = self._lib.rd_kafka_conf_new()
        # The handle only hosts the mock cluster; quiet its own logging.
        self._lib.rd_kafka_conf_set(conf, b"log_level", b"0", errstr, len(errstr))
        self._rk = self._lib.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, errstr, len(errstr))
        if not self._rk:
            raise RuntimeError(f"rd_kafka_new failed: {errstr.value.decode(errors='replace')}")
        self._cluster = self._lib.rd_kafka_mock_cluster_new(self._rk, brokers)
        if not self._cluster:
            self._lib.rd_kafka_destroy(self._rk)
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        self.brokers = brokers

    @property
    def bootstrap(self) -> str:
        return self._lib.rd_kafka_mock_cluster_bootstraps(self._cluster).decode()

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1) -> None:
        self._check(
            self._lib.rd_kafka_mock_topic_create(
                self._cluster, name.encode(), partitions, replication_factor
            ),
            "topic_create",
        )

    def set_broker_down(self, broker_id: int) -> None:
        self._check(self._lib.rd_kafka_mock_broker_set_down(self._cluster, broker_id), "broker_set_down")

    def set_broker_up(self, broker_id: int) -> None:
        self._check(self._lib.rd_kafka_mock_broker_set_up(self._cluster, broker_id), "broker_set_up")

    def set_rtt(self, broker_id: int, rtt_ms: int) -> None:
        code = self._lib.rd_kafka_mock_broker_set_rtt(self._cluster, broker_id, rtt_ms)
        self._check(code, "broker_set_rtt")

    def set_broker_host_port(self, broker_id: int, host: str, port: int) -> None:
        """Advertise the broker at another address (a proxy in front of it) from now on."""
        code = self._lib.rd_kafka_mock_broker_set_host_port(self._cluster, broker_id, host.encode(), port)
        self._check(code, "broker_set_host_port")

    def broker_addresses(self) -> dict[int, tuple[str, int]]:
        return broker_addresses(self.bootstrap)

    def set_partition_leader(self, topic: str, partition: int, broker_id: int) -> None:
        self._check(
            self._lib.rd_kafka_mock_partition_set_leader(self._cluster, topic.encode(), partition, broker_id),
            "partition_set_leader",
        )

    def push_request_errors(self, api_key: int, errors: list[int]) -> None:
        """The next ``len(errors)`` requests of ``api_key`` fail with these error codes, in order."""
        array = (ctypes.c_int * len(errors))(*errors)
        self._lib.rd_kafka_mock_push_request_errors_array(
            self._cluster, api_key, len(errors), ctypes.cast(array, ctypes.c_void_p)
        )

    def set_group_initial_rebalance_delay(self, delay_ms: int) -> None:
        """How long a new group's first rebalance waits for more members (the mock's own default is 3 s,
        as Kafka's group.initial.rebalance.delay.ms)."""
        self._lib.rd_kafka_mock_group_initial_rebalance_delay_ms(self._cluster, delay_ms)

    @staticmethod
    def _check(code: int, what: str) -> None:
        if code != 0:
            raise RuntimeError(f"rd_kafka_mock_{what} failed with librdkafka error {code}")

    def close(self) -> None:
        if self._cluster:
            self._lib.rd_kafka_mock_cluster_destroy(self._cluster)
            self._cluster = None
        if self._rk:
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = None

    def __enter__(self) -> RdkafkaMockCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
