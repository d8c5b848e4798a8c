"""``kconform dissect`` and ``kconform capture`` on files: a pcap written by Scapy from made-up frames
(its last frame cut short) gives trace rows and a clear note, never a crash; the same in pcapng; and
``kconform capture`` records a real loopback exchange, with a command to run and until Ctrl-C, with
dumpcap and with Scapy's sniffer."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from click.testing import CliRunner
from scapy.utils import PcapNgWriter, wrpcap

from kconform.codecs import encode_request, encode_response, size_prefixed
from kconform.codecs.messages import (
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kconform.harness.capture import loopback_capture_allowed
from kconform.harness.cli import cli
from kconform.harness.dissect import TcpConversation, dissect_pcap
from kconform.traces import read_traces

PORT = 19092
NO_CAPTURE = (
    "capturing loopback traffic needs CAP_NET_RAW (root has it) in this process, or for the dumpcap engine "
    "in dumpcap's file capabilities: neither has it"
)


def _metadata_pair(correlation_id: int, topics: list[str]) -> tuple[bytes, bytes]:
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics])
    response = MetadataResponse(
        topics=[MetadataResponse.MetadataResponseTopic(error_code=3, name=t) for t in topics]
    )
    return (
        size_prefixed(encode_request(3, 12, correlation_id, "synthetic", request)),
        size_prefixed(encode_response(3, 12, correlation_id, response)),
    )


def _synthetic_packets():
    talk = TcpConversation(server=("127.0.0.1", PORT))
    talk.handshake()
    for correlation_id in range(1, 4):
        request, response = _metadata_pair(correlation_id, [f"topic-{correlation_id}", "shared"])
        talk.send(request, to_server=True, sizes=[10])
        talk.send(response, to_server=False)
    request, response = _metadata_pair(4, ["last"])
    talk.send(request, to_server=True)
    talk.send(response[:-7], to_server=False)  # the capture ends 7 bytes before the last frame does
    return talk.packets, len(response)


def _check(result, last_size: int) -> None:
    assert [e.outcome for e in result.exchanges] == ["pass", "pass", "pass", "error"]
    first = result.exchanges[0]
    assert (first.api_name, first.api_version, first.client_id) == ("Metadata", 12, "synthetic")
    assert first.topics == ("topic-1", "shared") and first.error_codes == (3, 3)
    last = result.exchanges[-1]
    assert (last.correlation_id, last.topics, last.response_bytes) == (4, ("last",), last_size)
    assert last.notes == (
        f"response truncated: its size prefix says {last_size - 4} bytes, the capture ends after "
        f"{last_size - 4 - 7}",
    )


def test_a_scapy_pcap_with_a_truncated_last_frame_gives_rows_and_a_note(tmp_path):
    packets, last_size = _synthetic_packets()
    pcap = tmp_path / "synthetic.pcap"
    wrpcap(str(pcap), packets)
    _check(dissect_pcap(pcap, [PORT]), last_size)

    run = tmp_path / "run"
    shown = CliRunner().invoke(
        cli,
        ["dissect", str(pcap), "--port", str(PORT), "--out", str(run), "--run-id", "r1", "--format", "json"],
    )
    assert shown.exit_code == 0, shown.output
    summary = json.loads(shown.stdout)
    assert summary["exchanges"] == 4 and summary["outcomes"] == {"pass": 3, "error": 1}
    assert summary["problems"][0]["notes"][0].startswith("response truncated")
    table = read_traces(run)
    assert table["run_id"].to_pylist() == ["r1"] * 4
    assert table["target"].to_pylist() == [f"capture:127.0.0.1:{PORT}"] * 4
    assert table["outcome"].to_pylist() == ["pass", "pass", "pass", "error"]
    assert table["topics"][1].as_py() == ["topic-2", "shared"]
    assert table["error_codes"][0].as_py() == [3, 3] and table["error_codes"][3].as_py() == []
    assert table["verdict"][3].as_py().startswith("response truncated")
    assert table["case_id"][0].as_py() == "synthetic.pcap:5"  # the packet that completed the request
    assert all(latency > 0 for latency in table["latency_us"].to_pylist())

    shown = CliRunner().invoke(cli, ["dissect", str(pcap), "--port", str(PORT)])
    assert shown.exit_code == 0, shown.output
    assert "Metadata (3)" in shown.stdout and "response truncated" in shown.stdout


def test_pcapng_reads_the_same(tmp_path):
    packets, last_size = _synthetic_packets()
    path = tmp_path / "synthetic.pcapng"
    with PcapNgWriter(str(path)) as writer:
        for packet in packets:
            writer.write(packet)
    _check(dissect_pcap(path, [PORT]), last_size)


def test_dissect_says_what_to_do_with_a_file_that_is_not_a_capture_or_a_port_without_kafka(tmp_path):
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"not a capture at all")
    shown = CliRunner().invoke(cli, ["dissect", str(junk)])
    assert shown.exit_code != 0 and "give a pcap or pcapng file" in shown.output
    packets, _ = _synthetic_packets()
    pcap = tmp_path / "synthetic.pcap"
    wrpcap(str(pcap), packets)
    shown = CliRunner().invoke(cli, ["dissect", str(pcap)])  # the default port, 9092
    assert shown.exit_code == 0 and "give the broker's port with --port" in shown.stdout


class _TinyKafkaServer:
    """Answers one ApiVersions request per connection, on a free port."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            with connection:
                size = int.from_bytes(_read(connection, 4), "big")
                frame = _read(connection, size)
                correlation_id = int.from_bytes(frame[4:8], "big")
                answer = ApiVersionsResponse(
                    api_keys=[ApiVersionsResponse.ApiVersion(api_key=18, max_version=3)]
                )
                connection.sendall(size_prefixed(encode_response(18, 3, correlation_id, answer)))
                connection.recv(1)

    def close(self) -> None:
        self.socket.close()


def _read(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


_CLIENT = textwrap.dedent("""
    import socket, sys
    from kconform.codecs import encode_request, size_prefixed
    from kconform.codecs.messages import ApiVersionsRequest
    with socket.create_connection(("127.0.0.1", int(sys.argv[1]))) as s:
        body = ApiVersionsRequest(client_software_name="probe", client_software_version="1")
        s.sendall(size_prefixed(encode_request(18, 3, 42, "probe", body)))
        s.recv(4096)
""")


@pytest.fixture
def server():
    served = _TinyKafkaServer()
    yield served
    served.close()


def _needs_capture(engine: str) -> None:
    if engine == "dumpcap" and shutil.which("dumpcap") is None:
        pytest.skip("dumpcap is not installed: run bash ci/install-tools.sh")
    if not loopback_capture_allowed(engine):
        pytest.skip(NO_CAPTURE)


def _one_probe(path, port: int) -> None:
    result = dissect_pcap(path, [port])
    assert [(e.api_name, e.correlation_id, e.client_id, e.outcome) for e in result.exchanges] == [
        ("ApiVersions", 42, "probe", "pass")
    ]
    assert result.retransmitted_bytes == 0  # each loopback packet recorded once


def test_capture_records_while_a_command_runs(server, tmp_path):
    _needs_capture("dumpcap")
    out = tmp_path / "probe.pcap"
    command = [sys.executable, "-c", _CLIENT, str(server.port)]
    shown = CliRunner().invoke(
        cli, ["capture", "--port", str(server.port), "--out", str(out), "--", *command]
    )
    assert shown.exit_code == 0, shown.output
    assert out.read_bytes()[:4] == b"\xd4\xc3\xb2\xa1"  # classic pcap, as the name asks
    # the console wraps long lines wherever the paths put the break: compare the words
    assert "read them with: kconform dissect" in " ".join(shown.output.split())
    _one_probe(out, server.port)
    failing = CliRunner().invoke(
        cli,
        [
            "capture",
            "-p",
            str(server.port),
            "-o",
            str(out),
            "--",
            sys.executable,
            "-c",
            "raise SystemExit(3)",
        ],
    )
    assert failing.exit_code == 3  # the command's own exit status


@pytest.mark.parametrize("engine", ["dumpcap", "scapy"])
def test_capture_records_until_ctrl_c(server, tmp_path, engine):
    _needs_capture(engine)
    out = tmp_path / "probe.pcapng"
    recorder = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kconform.harness.cli",
            "capture",
            "-p",
            str(server.port),
            "-o",
            str(out),
            "--engine",
            engine,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)  # the filter is set once the file is open
        subprocess.run([sys.executable, "-c", _CLIENT, str(server.port)], check=True, timeout=30)
        time.sleep(0.3)
        recorder.send_signal(signal.SIGINT)
        output, _ = recorder.communicate(timeout=90)  # a loaded CI machine is slow to wind down
    finally:
        if recorder.poll() is None:
            recorder.kill()
            recorder.wait()
    assert recorder.returncode == 0, output
    assert f"({engine})" in output
    assert out.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"  # pcapng, as the name asks
    _one_probe(out, server.port)
