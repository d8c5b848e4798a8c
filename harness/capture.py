"""Packet capture of Kafka traffic, read back by Wireshark's Kafka dissector as an independent oracle.

``capture_tcp_port(port, path)`` records the traffic of one TCP port on an interface (loopback by
default) into a pcapng file for the duration of a with-block, with ``dumpcap`` (Wireshark's capture
engine, the one ``tshark -i`` runs). ``dissect_kafka(path, port)`` runs ``tshark -r`` over the file
with that port decoded as Kafka and returns every Kafka PDU it found (direction, API key and version,
correlation id, TCP stream, tshark's own request/response pairing) and every expert info (severity,
group, message), read from tshark's PDML output. It will grow into ``kconform capture``."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "CaptureUnavailable",
    "Capture",
    "Dissection",
    "ExpertInfo",
    "KafkaPdu",
    "capture_tcp_port",
    "dissect_kafka",
    "tcp_ports_filter",
]

_SETTLE_S = 0.5  # dumpcap reads the kernel buffer every 250 ms: let the last packets land


CAP_NET_RAW = 13  # linux/capability.h
NO_CAPTURE = (
    "capturing loopback traffic needs CAP_NET_RAW (root has it); neither this process nor dumpcap has it"
)


def loopback_capture_allowed(engine: str = "dumpcap") -> bool:
    """Whether this machine lets a capture on loopback start: CAP_NET_RAW in this process's effective
    set (root has it) or, for dumpcap, among dumpcap's file capabilities (setcap cap_net_raw+eip).
    Where it does, a capture that fails is a failure of ours, not the machine's."""
    status = Path("/proc/self/status").read_text()
    match = re.search(r"^CapEff:\s*([0-9a-f]+)$", status, re.M)
    if match and int(match.group(1), 16) >> CAP_NET_RAW & 1:
        return True
    dumpcap = shutil.which("dumpcap")
    if engine != "dumpcap" or dumpcap is None:
        return False
    try:
        file_caps = os.getxattr(dumpcap, "security.capability")  # vfs_cap_data: magic, permitted, ...
    except OSError:
        return False
    return len(file_caps) >= 8 and int.from_bytes(file_caps[4:8], "little") >> CAP_NET_RAW & 1 == 1


class CaptureUnavailable(RuntimeError):
    """Capturing is not possible here (no dumpcap, or no permission to capture on the interface)."""


@dataclass(slots=True)
class Capture:
    path: Path
    port: int
    interface: str
    log: list[str] = field(default_factory=list)
    """dumpcap's messages (its packet and drop counts come last)."""


def tcp_ports_filter(ports: Sequence[int]) -> str:
    """The capture filter for TCP traffic on any of ``ports``."""
    return " or ".join(f"tcp port {int(port)}" for port in ports)


@contextmanager
def capture_tcp_port(
    port: int,
    path: Path,
    *,
    interface: str = "lo",
    start_timeout: float = 15.0,
    more_ports: Sequence[int] = (),
    pcapng: bool = True,
) -> Iterator[Capture]:
    """Capture ``tcp port PORT`` (and any of ``more_ports``) on ``interface`` into ``path`` while the
    block runs, as pcapng (or classic pcap with ``pcapng=False``). Raises ``CaptureUnavailable`` (with
    dumpcap's reason) if the capture cannot start."""
    dumpcap = shutil.which("dumpcap")
    if dumpcap is None:
        raise CaptureUnavailable("dumpcap not found: install Wireshark's tshark (bash ci/install-tools.sh)")
    path = Path(path)
    capture = Capture(path, port, interface)
    process = subprocess.Popen(
        [dumpcap, "-i", interface, "-f", tcp_ports_filter([port, *more_ports]), "-w", str(path)]
        + ([] if pcapng else ["-P"]),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = threading.Event()

    def pump() -> None:  # dumpcap says "File: PATH" once the interface is open and the filter set
        for line in process.stderr:
            capture.log.append(line.rstrip("\n"))
            if line.startswith("File:"):
                started.set()
        started.set()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    if not started.wait(start_timeout) or process.poll() is not None:
        process.kill()
        process.wait()
        reader.join(5)
        raise CaptureUnavailable(
            f"dumpcap could not capture on {interface} (exit {process.returncode}): "
            + " ".join(line for line in capture.log if line.strip())
        )
    try:
        yield capture
    finally:
        time.sleep(_SETTLE_S)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(5)


@dataclass(frozen=True, slots=True)
class ExpertInfo:
    frame: int
    protocol: str
    severity: str
    """tshark's word, lower case: comment, chat, note, warning or error."""
    group: str
    message: str


@dataclass(frozen=True, slots=True)
class KafkaPdu:
    frame: int
    stream: int
    is_request: bool
    api_key: int | None
    api_version: int | None
    correlation_id: int | None
    matched_frame: int | None
    """tshark's pairing: a request's response frame, or a response's request frame."""
    batch_codecs: tuple[int, ...]
    """The compression codec of every record batch tshark found (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)."""
    record_values: tuple[bytes, ...]
    """Every record value tshark read, decompressed."""
    experts: tuple[ExpertInfo, ...]
    topics: tuple[str, ...] = ()
    """Every topic name tshark shows in the PDU, in order."""


@dataclass(slots=True)
class Dissection:
    pdus: list[KafkaPdu]
    experts: list[ExpertInfo]

    def at_severity(self, severity: str) -> list[ExpertInfo]:
        return [e for e in self.experts if e.severity == severity]


def dissect_kafka(path: Path, port: int) -> Dissection:
    """Every Kafka PDU and expert info tshark finds in the capture, with ``port`` decoded as Kafka.
    tshark runs two passes (``-2``) so that requests know their responses; its PDML is read as it
    streams, one packet at a time."""
    tshark = shutil.which("tshark")
    if tshark is None:
        raise CaptureUnavailable("tshark not found: install it (bash ci/install-tools.sh)")
    command = [tshark, "-n", "-2", "-r", str(path), "-d", f"tcp.port=={port},kafka", "-T", "pdml"]
    dissection = Dissection([], [])
    with tempfile.TemporaryFile() as errors:
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors) as process:
            for _, element in ElementTree.iterparse(process.stdout):
                if element.tag == "packet":
                    _read_packet(element, dissection)
                    element.clear()
        if process.returncode != 0:
            errors.seek(0)
            message = errors.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"tshark failed on {path} (exit {process.returncode}): {message}")
    return dissection


def _read_packet(packet: ElementTree.Element, out: Dissection) -> None:
    frame = _int(_field(packet, "frame.number")) or 0
    stream = _int(_field(packet, "tcp.stream"))
    for proto in packet.findall("proto"):
        name = proto.get("name", "")
        protocol = name
        if name == "_ws.malformed":  # showname "[Malformed Packet: Kafka]" names the protocol
            protocol = proto.get("showname", "").rpartition(": ")[2].rstrip("]").lower() or name
        experts = tuple(_experts(proto, frame, protocol))
        out.experts.extend(experts)
        if name != "kafka":
            continue
        is_request = _field(proto, "kafka.request_key") is not None
        version = _field(proto, "kafka.api_version" if is_request else "kafka.response.version")
        out.pdus.append(
            KafkaPdu(
                frame=frame,
                stream=-1 if stream is None else stream,
                is_request=is_request,
                api_key=_int(_field(proto, "kafka.api_key")),
                api_version=_int(version),
                correlation_id=_int(_field(proto, "kafka.correlation_id")),
                matched_frame=_int(
                    _field(proto, "kafka.response_frame" if is_request else "kafka.request_frame")
                ),
                batch_codecs=tuple(int(v) for v in _all(proto, "kafka.batch_codec")),
                record_values=tuple(_bytes(v) for v in _all(proto, "kafka.message_value")),
                experts=experts,
                topics=tuple(_all(proto, "kafka.topic_name")),
            )
        )


def _field(element: ElementTree.Element, name: str) -> str | None:
    """The first field of that name in the header of a PDU (the top level of ``element``), else
    anywhere below it."""
    for child in element.findall("field"):
        if child.get("name") == name:
            return child.get("show")
    found = element.find(f".//field[@name='{name}']")
    return None if found is None else found.get("show")


def _all(element: ElementTree.Element, name: str) -> list[str]:
    return [node.get("show", "") for node in element.iter("field") if node.get("name") == name]


def _experts(proto: ElementTree.Element, frame: int, protocol: str) -> Iterator[ExpertInfo]:
    for node in proto.iter("field"):
        if node.get("name") != "_ws.expert":
            continue
        parts = {child.get("name"): child for child in node.findall("field")}
        severity = parts.get("_ws.expert.severity")
        group = parts.get("_ws.expert.group")
        message = parts.get("_ws.expert.message")
        yield ExpertInfo(
            frame=frame,
            protocol=protocol,
            severity=_shown_word(severity).lower(),
            group=_shown_word(group),
            message=message.get("show", "") if message is not None else node.get("showname", ""),
        )


def _shown_word(node: ElementTree.Element | None) -> str:
    """The word after the colon of a ``showname`` such as ``Severity level: Error``."""
    if node is None:
        return ""
    return node.get("showname", "").rpartition(": ")[2]


def _bytes(shown: str) -> bytes:
    """tshark shows bytes as ``76:30``; a null value as text, which reads as no bytes."""
    try:
        return bytes.fromhex(shown.replace(":", ""))
    except ValueError:
        return b""


def _int(value: str | None) -> int | None:
    try:
        return None if value is None else int(value)
    except ValueError:
        return None
