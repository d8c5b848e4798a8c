"""``kconform bench bombs``: compression bombs must not stall the reference broker.

A reference broker runs as a subprocess. One connection sends N Produce requests back to back, each one
batch of many empty records compressed with ``--codec`` (by default 1.3 M records in zstd, about 1 MB:
each codec's default count fills about 1 MB, under ``max.message.bytes``). ``--kind rebuilt`` creates
the topic with another ``compression.type``, so the broker must rebuild every bomb with that codec
(LogValidator's recompression path) rather than keep it as it came. Meanwhile another connection
sends ApiVersions every 10 ms and times each answer, and the broker's resident memory (VmRSS in
/proc/PID/status) is sampled. The goal is the yardstick, not a peer: p99 of the ApiVersions latencies
under 100 ms, and peak RSS within 32 MB of the baseline taken before the bombs. The command exits
non-zero when either is missed, or when a bomb goes unanswered."""

from __future__ import annotations

import json
import socket
import statistics
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from kconform.codecs import FrameDecoder, decode_response, encode_request, size_prefixed
from kconform.codecs.compression import Compression
from kconform.codecs.messages import ApiVersionsRequest, CreateTopicsRequest, ProduceRequest
from kconform.codecs.records import Record, encode_batch

__all__ = ["BombsResult", "bomb_batch", "run"]

BOMB_RECORDS = 1_300_000  # empty records: about 1 MB of zstd
# empty records per bomb that fill about 1 MB with each codec (lz4 and snappy shrink them only ~2x)
CODEC_RECORDS = {"zstd": BOMB_RECORDS, "gzip": 700_000, "lz4": 250_000, "snappy": 250_000}
KINDS = ("kept", "rebuilt")
# the topic codec a rebuilt bomb is written with: another one than the bomb's
REBUILD_CODEC = {"zstd": "lz4", "gzip": "lz4", "lz4": "zstd", "snappy": "zstd"}
GOAL_P99_MS = 100.0
GOAL_RSS_MB = 32.0
GOAL_TEXT = f"goal: p99 < {GOAL_P99_MS:.0f} ms, RSS +{GOAL_RSS_MB:.0f} MB"
PROBE_INTERVAL_S = 0.010
RSS_INTERVAL_S = 0.005
TOPIC = "bombs"
PRODUCE_VERSION = 9
API_VERSIONS_VERSION = 3
CREATE_TOPICS_VERSION = 7
IO_TIMEOUT_S = 300.0


@dataclass(frozen=True, slots=True)
class BombsResult:
    codec: str
    kind: str
    topic_compression: str
    bombs: int
    records_per_bomb: int
    bomb_bytes: int
    samples: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    baseline_rss_mb: float
    peak_rss_above_baseline_mb: float
    bombs_seconds: float
    bomb_error_codes: list[int]

    @property
    def goal_met(self) -> bool:
        answered = len(self.bomb_error_codes) == self.bombs
        return (
            answered
            and self.samples > 0
            and self.p99_ms < GOAL_P99_MS
            and self.peak_rss_above_baseline_mb <= GOAL_RSS_MB
        )


def bomb_batch(records: int, now_ms: int, codec: str = "zstd") -> bytes:
    """One batch of ``records`` empty records (null key and value, no headers) compressed with ``codec``."""
    empty = [Record(i, now_ms, None, None, []) for i in range(records)]
    return encode_batch(empty, compression=Compression[codec.upper()], base_offset=0)


class _Connection:
    """A blocking request/response connection speaking whole frames."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.sock = socket.create_connection(address, timeout=IO_TIMEOUT_S)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.frames = FrameDecoder(max_frame_size=64 * 1024 * 1024)
        self.correlation_id = 0

    def send(self, api_key: int, version: int, body) -> None:
        self.correlation_id += 1
        frame = encode_request(api_key, version, self.correlation_id, "kconform-bench", body)
        self.sock.sendall(size_prefixed(frame))

    def receive(self) -> bytes:
        while (frame := self.frames.next_frame()) is None:
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("the broker closed the connection")
            self.frames.feed(data)
        return frame

    def close(self) -> None:
        self.sock.close()


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/{pid}/status has no VmRSS line")


def _produce(batch: bytes) -> ProduceRequest:
    data = ProduceRequest.PartitionProduceData(index=0, records=batch)
    topic = ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[data])
    return ProduceRequest(transactional_id=None, acks=1, timeout_ms=30_000, topic_data=[topic])


def _error_codes(frame: bytes) -> list[int]:
    _, body = decode_response(frame, 0, PRODUCE_VERSION)
    return [p.error_code for topic in body.responses for p in topic.partition_responses]


def _create_topic(conn: _Connection, compression_type: str) -> None:
    config = CreateTopicsRequest.CreatableTopicConfig(name="compression.type", value=compression_type)
    topic = CreateTopicsRequest.CreatableTopic(
        name=TOPIC, num_partitions=1, replication_factor=1, configs=[config]
    )
    conn.send(19, CREATE_TOPICS_VERSION, CreateTopicsRequest(topics=[topic], timeout_ms=30_000))
    _, body = decode_response(conn.receive(), 19, CREATE_TOPICS_VERSION)
    codes = [t.error_code for t in body.topics]
    if any(codes):
        raise RuntimeError(f"CreateTopics {TOPIC} answered error codes {codes}")


@dataclass(frozen=True, slots=True)
class _Bomb:
    codec: str
    kind: str
    topic_compression: str
    records: int
    batch: bytes


def _measure(address: tuple[str, int], pid: int, bomb: _Bomb, bombs: int) -> BombsResult:
    batch, records = bomb.batch, bomb.records
    bomber, prober = _Connection(address), _Connection(address)
    try:
        _create_topic(bomber, bomb.topic_compression)
        bomber.send(0, PRODUCE_VERSION, _produce(bomb_batch(10, int(time.time() * 1000), bomb.codec)))
        _error_codes(bomber.receive())  # warm the produce path before the baseline
        prober.send(18, API_VERSIONS_VERSION, ApiVersionsRequest())
        prober.receive()
        time.sleep(0.2)
        baseline = _rss_mb(pid)
        peak = [baseline]
        latencies: list[float] = []
        done = threading.Event()

        def sample_rss() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], _rss_mb(pid))
                time.sleep(RSS_INTERVAL_S)

        def probe() -> None:
            next_at = time.monotonic()
            while not done.is_set():
                started = time.monotonic()
                prober.send(18, API_VERSIONS_VERSION, ApiVersionsRequest())
                prober.receive()
                latencies.append((time.monotonic() - started) * 1000)
                next_at += PROBE_INTERVAL_S
                time.sleep(max(0.0, next_at - time.monotonic()))

        threads = [
            threading.Thread(target=sample_rss, daemon=True),
            threading.Thread(target=probe, daemon=True),
        ]
        for thread in threads:
            thread.start()
        request = _produce(batch)
        started = time.monotonic()
        codes: list[int] = []
        try:
            for _ in range(bombs):
                bomber.send(0, PRODUCE_VERSION, request)
            for _ in range(bombs):
                codes += _error_codes(bomber.receive())
        finally:
            elapsed = time.monotonic() - started
            time.sleep(0.1)  # a few probes after the last answer
            done.set()
            for thread in threads:
                thread.join(IO_TIMEOUT_S)
        ordered = sorted(latencies)
        return BombsResult(
            codec=bomb.codec,
            kind=bomb.kind,
            topic_compression=bomb.topic_compression,
            bombs=bombs,
            records_per_bomb=records,
            bomb_bytes=len(batch),
            samples=len(ordered),
            p50_ms=round(statistics.median(ordered), 2) if ordered else float("nan"),
            p99_ms=round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 2)
            if ordered
            else float("nan"),
            max_ms=round(ordered[-1], 2) if ordered else float("nan"),
            baseline_rss_mb=round(baseline, 1),
            peak_rss_above_baseline_mb=round(peak[0] - baseline, 1),
            bombs_seconds=round(elapsed, 3),
            bomb_error_codes=codes,
        )
    finally:
        bomber.close()
        prober.close()


def measure(*, bombs: int, records: int | None, codec: str = "zstd", kind: str = "kept") -> BombsResult:
    """Start a reference broker, throw ``bombs`` bombs of ``records`` records (None: the codec's default)
    compressed with ``codec`` at it, and measure; ``kind`` "rebuilt" makes the topic's codec another."""
    from kconform.reference_broker.process import start_broker_process

    if codec not in CODEC_RECORDS or kind not in KINDS:
        raise ValueError(f"codec must be one of {sorted(CODEC_RECORDS)} and kind one of {KINDS}")
    records = CODEC_RECORDS[codec] if records is None else records
    topic_compression = REBUILD_CODEC[codec] if kind == "rebuilt" else "producer"
    bomb = _Bomb(codec, kind, topic_compression, records, bomb_batch(records, int(time.time() * 1000), codec))
    with tempfile.TemporaryDirectory(prefix="kconform-bombs-") as data_dir:
        node = start_broker_process(Path(data_dir))
        try:
            return _measure((node.host, node.port), node.process.pid, bomb, bombs)
        finally:
            node.stop()


def report_lines(result: BombsResult) -> list[str]:
    verdict = "met" if result.goal_met else "MISSED"
    return [
        f"bombs: {result.bombs} x {result.records_per_bomb:,} empty records, {result.codec} batch of "
        f"{result.bomb_bytes:,} bytes, pipelined on one connection",
        f"topic compression.type {result.topic_compression}: "
        + ("rebuilt by the broker" if result.kind == "rebuilt" else "kept as the producer compressed it"),
        f"bombs answered in {result.bombs_seconds:.2f} s, error codes {result.bomb_error_codes}",
        f"ApiVersions latency on another connection ({result.samples} samples): p50 {result.p50_ms:.1f} ms, "
        f"p99 {result.p99_ms:.1f} ms, max {result.max_ms:.1f} ms",
        f"broker RSS: baseline {result.baseline_rss_mb:.1f} MB, "
        f"peak +{result.peak_rss_above_baseline_mb:.1f} MB",
        f"{GOAL_TEXT}: {verdict}",
    ]


def run(*, bombs: int, records: int | None, as_json: bool, codec: str = "zstd", kind: str = "kept") -> bool:
    """Run the benchmark and print its figures; True when the goal is met."""
    result = measure(bombs=bombs, records=records, codec=codec, kind=kind)
    if as_json:
        row = {"bench": "bombs", **asdict(result), "goal": GOAL_TEXT, "goal_met": result.goal_met}
        print(json.dumps(row))
    else:
        for line in report_lines(result):
            print(line)
    return result.goal_met
