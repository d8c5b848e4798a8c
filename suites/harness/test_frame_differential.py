"""The raw-bytes differential (``kconform diff-frames``): frames are built the same for the same seed and
cover every mutation, each frame is damaged the way it says, fates are read and compared by pure
functions, and live runs are trustworthy: the reference broker against itself differs nowhere, the
reference against librdkafka's mock cluster differs somewhere, within bounded time, and a target that
dies on a frame is recorded as ``crashed`` and brought back."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
import time
from contextlib import ExitStack

import pytest
from click.testing import CliRunner

from kconform.codecs import (
    DEFAULT_MAX_FRAME_SIZE,
    DecodeError,
    api_schema,
    api_schemas,
    decode_request,
    decode_request_lenient,
    encode_response,
)
from kconform.codecs.messages import ApiVersionsResponse, MetadataRequest, MetadataResponse, ProduceResponse
from kconform.codecs.records import iter_batches
from kconform.codecs.spans import field_spans
from kconform.harness.cli import cli
from kconform.harness.diff.frame_runner import SUMMARY_FILE, run_frame_differential
from kconform.harness.diff.frames import (
    MUTATIONS,
    FateDifference,
    FrameSpace,
    answer_fate,
    compare_fates,
    generate_frames,
    normalise_fate,
)
from kconform.harness.targets.base import Target
from kconform.harness.targets.registry import make_target
from kconform.traces import read_traces

# What the two live targets advertise (ApiVersions of the reference broker as Kafka 4 and of
# librdkafka 2.16's mock cluster), so that generation is checked without starting anything.
REFERENCE = {0: (0, 13), 1: (4, 18), 2: (1, 10), 3: (0, 13), 8: (2, 9), 9: (1, 9), 10: (0, 6), 18: (0, 4),
             19: (2, 7), 22: (0, 5), 23: (2, 4), 60: (0, 2)}  # fmt: skip
MOCK = {0: (0, 10), 1: (0, 16), 2: (0, 7), 3: (0, 13), 8: (0, 9), 9: (0, 6), 10: (0, 3), 18: (0, 2),
        22: (0, 4), 23: (2, 2), 71: (0, 0)}  # fmt: skip
SPACE = FrameSpace.of(REFERENCE, MOCK)
TIMEOUT = 0.4  # seconds per answer; the targets here answer within a few milliseconds
SIZE = struct.Struct(">i")


def _size(frame) -> int:
    return SIZE.unpack_from(frame.data)[0]


# ---- generation ---------------------------------------------------------------------------------------


def test_the_same_seed_builds_the_same_frames_and_another_seed_others():
    first = generate_frames(120, 7, SPACE)
    assert [(f.description, f.data) for f in first] == [
        (f.description, f.data) for f in generate_frames(120, 7, SPACE)
    ]
    assert [f.data for f in first] != [f.data for f in generate_frames(120, 8, SPACE)]
    assert [f.index for f in first] == list(range(120))


def test_every_mutation_takes_its_turn():
    frames = generate_frames(3 * len(MUTATIONS), 1, SPACE)
    for start in range(0, len(frames), len(MUTATIONS)):
        assert sorted(f.mutation for f in frames[start : start + len(MUTATIONS)]) == sorted(MUTATIONS)


def test_each_frame_is_damaged_the_way_it_says():
    frames = generate_frames(10 * len(MUTATIONS), 3, SPACE)
    known_keys = {s.api_key for s in api_schemas()}
    for frame in frames:
        body = frame.data[4:]
        kind = frame.mutation
        if kind not in ("size-over", "size-under", "size-negative", "size-over-max"):
            assert _size(frame) == len(body), frame.description
        if kind in ("truncate-field", "truncate-anywhere"):
            with pytest.raises(DecodeError):
                decode_request(body)
        elif kind == "size-over":
            assert _size(frame) > len(body)
        elif kind == "size-under":
            assert 0 < _size(frame) < len(body)
        elif kind == "size-negative":
            assert _size(frame) < 0
        elif kind == "size-over-max":
            assert frame.data == SIZE.pack(DEFAULT_MAX_FRAME_SIZE + 1)
        elif kind == "zero-length":
            assert frame.data == SIZE.pack(0)
        elif kind == "unknown-api-key":
            assert frame.api_key not in known_keys and frame.answer_as is None
        elif kind == "version-above":
            assert frame.api_version == SPACE.highest[frame.api_key] + 1
        elif kind == "api-versions-unsupported":
            assert frame.api_version > SPACE.highest[18] and frame.answer_as == (18, 0)
        elif kind == "compact-length-negative":
            assert bytes.fromhex("feffffff0f") in body
        elif kind == "array-count-negative":
            assert SIZE.pack(-2) in body and not api_schema(frame.api_key).flexible(frame.api_version)
        elif kind == "record-batch-crc":
            _, request, _ = decode_request_lenient(body)
            records = request.topic_data[0].partition_data[0].records
            with pytest.raises(DecodeError, match="(?i)crc"):
                list(iter_batches(bytes(records)))
        elif kind == "trailing-bytes":
            assert decode_request_lenient(body)[2]
        assert frame.description.startswith(kind)


def test_field_spans_locate_lengths_as_kafka_reads_them():
    encoded = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="abc")]).encode(12)
    spans = {s.path: s for s in field_spans(MetadataRequest, encoded, 12)}
    topics, name = spans["topics"], spans["topics[0].name"]
    assert (topics.start, topics.prefix_end, topics.end, topics.nullable) == (0, 1, 22, True)
    assert encoded[name.prefix_end : name.end] == b"abc"
    assert topics.prefix_for(-3) == bytes.fromhex("feffffff0f")  # Java's readUnsignedVarint: -2
    old = {s.path: s for s in field_spans(MetadataRequest, MetadataRequest(topics=[]).encode(1), 1)}
    assert old["topics"].prefix_for(-2) == SIZE.pack(-2)


# ---- fates --------------------------------------------------------------------------------------------


def test_answers_become_their_first_error_code():
    unsupported = ApiVersionsResponse(
        error_code=35, api_keys=[ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=4)]
    )
    assert answer_fate(encode_response(18, 0, 1, unsupported), (18, 0)) == "answered:35"
    topic = MetadataResponse.MetadataResponseTopic(error_code=3, name="t")
    metadata = encode_response(3, 12, 1, MetadataResponse(topics=[topic]))
    assert answer_fate(metadata, (3, 12)) == "answered:3"
    assert answer_fate(encode_response(0, 9, 1, ProduceResponse()), (0, 9)) == "answered:none"
    assert answer_fate(b"\x00\x00\x00\x01\xff", (3, 12)) == "answered:undecodable"
    assert answer_fate(metadata, None) == "answered:undecodable"


def test_fates_compare_after_normalising_only_what_kafka_leaves_open():
    assert compare_fates("truncate-field", "closed", "closed") is None
    assert compare_fates("trailing-bytes", "answered:3", "answered:3") is None
    assert compare_fates("truncate-field", "closed", "timeout") == FateDifference(
        "truncate-field", "closed", "timeout"
    )
    assert compare_fates("zero-length", "closed", "timeout") is not None  # Kafka closes: a hang differs
    assert compare_fates("size-over", "closed", "timeout") is None  # Kafka waits out connections.max.idle.ms
    assert compare_fates("size-over", "answered:0", "timeout") is not None
    assert compare_fates("trailing-bytes", "answered:0", "answered:3").fates == "answered:0|answered:3"
    assert compare_fates("record-batch-crc", "crashed", "closed") is not None
    assert normalise_fate("size-over", "crashed") == "crashed"


# ---- live ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def live():
    with ExitStack() as stack:
        targets = {
            name: make_target(name.split("#")[0]) for name in ("reference", "reference#2", "rdkafka-mock")
        }
        for target in targets.values():
            stack.enter_context(target)
        yield targets


@pytest.mark.peer
def test_the_reference_against_itself_differs_nowhere(live, tmp_path):
    result = run_frame_differential(
        live["reference"], live["reference#2"], tmp_path, frames=200, seed=5, reply_timeout=TIMEOUT
    )
    assert result.frames_sent == 200 and result.same and not result.crashes, result.differences
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert summary["frames_sent"] == 200 and summary["differences"] == []
    assert set(summary["mutations"]) == set(MUTATIONS)
    assert sum(row["sent"] for row in summary["mutations"].values()) == 200
    outcomes = read_traces(tmp_path).column("outcome").to_pylist()
    assert len(outcomes) == 400 and set(outcomes) == {"pass"}


@pytest.mark.peer
def test_the_reference_against_the_mock_differs_within_bounded_time(live, tmp_path):
    frames = 3 * len(MUTATIONS)
    started = time.monotonic()
    result = run_frame_differential(
        live["reference"], live["rdkafka-mock"], tmp_path, frames=frames, seed=0, reply_timeout=TIMEOUT
    )
    assert time.monotonic() - started < frames * (TIMEOUT + 0.25)  # no frame waits past its timeout
    assert result.frames_sent == frames and result.differences
    # librdkafka's mock reads 12 header bytes before it looks at the size: Kafka closes at once
    assert "frames/zero-length/no-header/closed|timeout" in result.differences
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    for difference in summary["differences"]:
        assert difference["signature"].startswith(f"frames/{difference['mutation']}/")
        assert bytes.fromhex(difference["example"]["hex"]) and difference["count"] >= 1
    traces = read_traces(tmp_path)
    assert max(traces.column("latency_us").to_pylist()) < (TIMEOUT + 0.25) * 1e6
    crashed = sum(row["fates"]["b"].get("crashed", 0) for row in summary["mutations"].values())
    on_the_spot = [c for c in summary["crashes"] if "noticed" not in c]
    assert crashed == len(on_the_spot) and len(summary["crashes"]) == len(result.crashes)  # a crash is a fate
    assert all(c["target"] == "rdkafka-mock" and c["description"] for c in summary["crashes"])


_SERVER = textwrap.dedent(
    """
    import os, socket, sys
    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)
    while True:
        connection, _ = listener.accept()
        connection.recv(4)
        if sys.argv[1] == "crash":
            print("assertion failed: planted", file=sys.stderr, flush=True)
            os._exit(134)
        connection.close()
    """
)


class _ScriptTarget(Target):
    """A listener in a process of its own that closes every connection or, told to, dies on the first."""

    kind = "script"

    def __init__(self, behaviour: str) -> None:
        super().__init__(behaviour)
        self.behaviour = behaviour
        self.process = None
        self.port = 0
        self.restarts = 0
        self.pretend_dead = False  # dead as far as alive() tells, until restarted

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, self.behaviour],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.port = int(self.process.stdout.readline())

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()

    def restart(self) -> None:
        self.restarts += 1
        self.pretend_dead = False
        super().restart()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None and not self.pretend_dead

    def crash_report(self) -> str:
        return self.process.stderr.read() if self.process.poll() is not None else ""

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def api_versions(self, *, refresh: bool = False):
        return REFERENCE

    def create_topic(self, name, partitions=1, replication_factor=1, configs=None) -> None:
        pass


def test_a_target_that_dies_on_a_frame_is_recorded_as_crashed_and_restarted(tmp_path):
    with _ScriptTarget("close") as steady, _ScriptTarget("crash") as fragile:
        result = run_frame_differential(steady, fragile, tmp_path, frames=3, seed=0, reply_timeout=TIMEOUT)
        assert fragile.restarts == 3 and fragile.alive()
    assert [c["frame"] for c in result.crashes] == [0, 1, 2]
    assert all("assertion failed: planted" in c["report"] and c["target"] == "crash" for c in result.crashes)
    assert all(g.fates[1] == "crashed" for g in result.differences.values())
    assert sum(g.count for g in result.differences.values()) == 3


def test_a_target_found_dead_before_a_frame_is_blamed_on_the_frame_before(tmp_path):
    with _ScriptTarget("close") as steady, _ScriptTarget("close") as quiet:

        def die_after_the_first(done: int, total: int, differing: int) -> None:
            quiet.pretend_dead = done == 1

        result = run_frame_differential(
            steady, quiet, tmp_path, frames=3, seed=0, reply_timeout=TIMEOUT, progress=die_after_the_first
        )
    assert quiet.restarts == 1 and result.same
    assert [(c["frame"], c["noticed"]) for c in result.crashes] == [(0, "before the next frame")]


# ---- the command ----------------------------------------------------------------------------------------


def _invoke(*args: str):
    result = CliRunner().invoke(cli, ["diff-frames", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result


@pytest.mark.peer
def test_the_command_exits_0_for_the_same_fates_and_1_for_differences(tmp_path):
    same = _invoke("--a", "reference", "--b", "reference", "--frames", "15", "--seed", "2",
                   "--timeout", str(TIMEOUT), "--out", str(tmp_path / "same"))  # fmt: skip
    assert same.exit_code == 0, same.output
    assert json.loads((tmp_path / "same" / SUMMARY_FILE).read_text())["frames_sent"] == 15
    differ = _invoke("--a", "reference", "--b", "rdkafka-mock", "--frames", "15", "--seed", "2",
                     "--timeout", str(TIMEOUT), "--out", str(tmp_path / "differ"))  # fmt: skip
    assert differ.exit_code == 1, differ.output
    assert "zero-length" in differ.output


def test_the_command_exits_2_for_bad_usage_and_unusable_targets(tmp_path):
    for args in (["--frames", "0"], ["--frames", "-3"], ["--a", "no-such-target", "--out", str(tmp_path)]):
        result = _invoke(*args)
        assert result.exit_code == 2, (args, result.output)
