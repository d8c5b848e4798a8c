"""``kconform capture`` (record Kafka traffic into a capture file) and ``kconform dissect`` (turn any
capture into trace rows and a per-API summary)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import click

_PACKETS = re.compile(r"Packets captured: (\d+)")
_OUTCOMES = ("pass", "error", "timeout", "closed")
_SHOWN_NOTES = 10


def _ports_option(function):
    return click.option(
        "--port",
        "-p",
        "ports",
        type=click.IntRange(1, 65535),
        multiple=True,
        default=(9092,),
        show_default=True,
        help="a Kafka (server) port; repeat for several",
    )(function)


@dataclass(slots=True)
class _Recording:
    path: Path
    engine: str
    packets: int | None = None


@contextmanager
def _dumpcap(ports: tuple[int, ...], out: Path, interface: str) -> Iterator[_Recording]:
    from ..capture import capture_tcp_port

    recording = _Recording(out, "dumpcap")
    pcapng = out.suffix.lower() == ".pcapng"
    with capture_tcp_port(ports[0], out, interface=interface, more_ports=ports[1:], pcapng=pcapng) as capture:
        yield recording
    for line in capture.log:
        if found := _PACKETS.search(line):
            recording.packets = int(found.group(1))


@contextmanager
def _scapy(ports: tuple[int, ...], out: Path, interface: str) -> Iterator[_Recording]:
    from scapy.config import conf
    from scapy.sendrecv import AsyncSniffer
    from scapy.utils import PcapNgWriter, PcapWriter

    from ..capture import tcp_ports_filter

    recording = _Recording(out, "scapy", 0)
    writer = PcapNgWriter(str(out)) if out.suffix.lower() == ".pcapng" else PcapWriter(str(out))
    lock = threading.Lock()

    def keep(packet) -> None:
        with lock:
            writer.write(packet)
            writer.flush()  # a capture stopped hard still holds every packet seen
            recording.packets += 1

    # a sending socket, unlike sniff's listening one, skips the outgoing copy of each loopback packet
    listener = conf.L2socket(iface=interface, filter=tcp_ports_filter(ports))
    sniffer = AsyncSniffer(opened_socket=listener, prn=keep, store=False)
    sniffer.start()
    time.sleep(0.3)  # the socket opens in the sniffer's thread
    try:
        yield recording
    finally:
        time.sleep(0.3)
        try:
            sniffer.stop()
        finally:
            listener.close()
            writer.close()


def _start_recording(engine: str, ports: tuple[int, ...], out: Path, interface: str):
    import shutil

    from ..capture import CaptureUnavailable

    if engine == "dumpcap" or (engine == "auto" and shutil.which("dumpcap")):
        return _dumpcap(ports, out, interface), CaptureUnavailable
    return _scapy(ports, out, interface), (OSError, RuntimeError)


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@_ports_option
@click.option(
    "--out",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="the capture file: pcapng if it ends in .pcapng, classic pcap otherwise",
)
@click.option("--interface", "-i", default="lo", show_default=True, help="network interface to record on")
@click.option(
    "--engine",
    type=click.Choice(["auto", "dumpcap", "scapy"]),
    default="auto",
    show_default=True,
    help="dumpcap (Wireshark's capture engine) when installed, else Scapy's sniffer",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def capture(ports: tuple[int, ...], out: Path, interface: str, engine: str, command: tuple[str, ...]) -> None:
    """Record the TCP traffic of Kafka port(s) into a capture file while COMMAND runs (give it after
    --), or until Ctrl-C. Capturing needs root or CAP_NET_RAW."""
    from rich.console import Console

    console = Console(stderr=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    recorder, unavailable = _start_recording(engine, ports, out, interface)
    where = f"tcp port {' or '.join(map(str, ports))} on {interface}"
    exit_code = 0
    started = time.monotonic()
    try:
        with recorder as recording:
            if command:
                console.print(f"recording {where} into {out} while running: {' '.join(command)}")
                exit_code = _run(command)
            else:
                _wait_for_interrupt(console, where, out, started)
    except unavailable as exc:
        raise click.ClickException(
            f"cannot capture {where}: {exc} (run as root or grant CAP_NET_RAW, or try --engine scapy)"
        ) from None
    except FileNotFoundError as exc:
        raise click.ClickException(f"cannot run {command[0]!r}: {exc.strerror} (check the command)") from None
    size = out.stat().st_size if out.exists() else 0
    packets = "?" if recording.packets is None else recording.packets
    console.print(
        f"{packets} packets ({size:,} bytes) in {time.monotonic() - started:.1f} s from {where} in {out} "
        f"({recording.engine}); read them with: kconform dissect {out} "
        + " ".join(f"--port {port}" for port in ports)
    )
    if exit_code:
        sys.exit(exit_code)


def _run(command: tuple[str, ...]) -> int:
    process = subprocess.Popen(list(command))
    while True:
        try:
            return process.wait()
        except KeyboardInterrupt:  # Ctrl-C reached the command too: let it finish on its own terms
            continue


def _wait_for_interrupt(console, where: str, out: Path, started: float) -> None:
    with console.status("") as status:
        try:
            while True:
                size = out.stat().st_size if out.exists() else 0
                status.update(
                    f"recording {where} into {out}: {time.monotonic() - started:.0f} s, {size:,} bytes "
                    "(Ctrl-C to stop)"
                )
                time.sleep(0.25)
        except KeyboardInterrupt:
            pass


@click.command()
@click.argument("pcap", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_ports_option
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="run directory to write trace rows into (DIR/traces/part-*.parquet)",
)
@click.option("--run-id", default=None, help="run id of the trace rows (default: dissect-<file>-<time>)")
@click.option(
    "--format",
    "output",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table: a summary by API and version; json: the same, with every exchange that did not pass",
)
def dissect(pcap: Path, ports: tuple[int, ...], out: Path | None, run_id: str | None, output: str) -> None:
    """Turn a capture (pcap or pcapng) into one trace row per Kafka request/response exchange and a
    summary by API and version."""
    from rich.console import Console

    from kconform.traces import TraceWriter

    from ..dissect import summarise, trace_rows

    console = Console(stderr=True)
    result = _dissect_with_progress(pcap, ports, console)
    run_id = run_id or f"dissect-{pcap.stem}-{time.strftime('%Y%m%dT%H%M%S')}"
    if out is not None:
        with TraceWriter(out, run_id) as traces:
            traces.extend(trace_rows(result.exchanges, source=pcap.name))
    summaries = summarise(result.exchanges)
    if output == "json":
        print(json.dumps(_as_json(pcap, ports, result, summaries, out, run_id), indent=2))
    else:
        _print_table(Console(), pcap, ports, result, summaries, out, run_id)


def _dissect_with_progress(pcap: Path, ports: tuple[int, ...], console):
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn
    from scapy.error import Scapy_Exception
    from scapy.utils import PcapReader

    from ..dissect import KafkaStreamDissector, segment_of

    dissector = KafkaStreamDissector(ports)
    total = pcap.stat().st_size
    columns = (
        TextColumn("dissecting {task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeElapsedColumn(),
    )
    try:
        with Progress(*columns, console=console, transient=True) as progress, PcapReader(str(pcap)) as reader:
            task = progress.add_task(pcap.name, total=total)
            for number, packet in enumerate(reader, 1):
                segment = segment_of(packet, number)
                if segment is not None:
                    dissector.feed(segment)
                if number % 500 == 0:
                    progress.update(task, completed=_position(reader))
    except Scapy_Exception as exc:
        raise click.ClickException(
            f"{pcap} is not a capture file Scapy can read ({exc}): give a pcap or pcapng file"
        ) from None
    return dissector.finish()


def _position(reader) -> int:
    try:
        return reader.f.tell()
    except (AttributeError, OSError, ValueError):
        return 0


def _latency_ms(value: int | None) -> str:
    return "" if value is None else f"{value / 1000:.1f}"


def _print_table(console, pcap, ports, result, summaries, out, run_id) -> None:
    from rich.table import Table

    table = Table(title=f"Kafka exchanges in {pcap.name} (port {', '.join(map(str, ports))})")
    table.add_column("API (key)", no_wrap=True)
    table.add_column("v", justify="right")
    for name in ("exchanges", *_OUTCOMES, "error codes", "p50 ms", "p99 ms"):
        table.add_column(name, justify="right")
    for summary in summaries:
        name = (
            "(request not captured)"
            if summary.api_name is None
            else f"{summary.api_name} ({summary.api_key})"
        )
        table.add_row(
            name,
            "" if summary.api_version is None else str(summary.api_version),
            str(summary.exchanges),
            *(str(summary.outcomes.get(outcome, 0) or "") for outcome in _OUTCOMES),
            str(summary.with_errors or ""),
            _latency_ms(summary.latency_percentile(0.5)),
            _latency_ms(summary.latency_percentile(0.99)),
        )
    console.print(table)
    outcomes = Counter(e.outcome for e in result.exchanges)
    console.print(
        f"{len(result.exchanges)} exchanges ({', '.join(f'{n} {o}' for o, n in sorted(outcomes.items()))}) "
        f"on {result.connections} connections, from {result.segments} TCP segments; "
        f"{result.retransmitted_bytes} bytes retransmitted, {result.lost_bytes} lost, "
        f"{result.skipped_bytes} skipped"
    )
    if not result.exchanges:
        console.print(
            f"no Kafka traffic on port {', '.join(map(str, ports))}: give the broker's port with --port"
        )
    problems = [e for e in result.exchanges if e.outcome != "pass"]
    for exchange in problems[:_SHOWN_NOTES]:
        what = exchange.api_name or "response"
        version = "" if exchange.api_version is None else f" v{exchange.api_version}"
        console.print(
            f"  packet {exchange.first_packet}: {what}{version} correlation id {exchange.correlation_id} "
            f"{exchange.outcome}: {'; '.join(exchange.notes)}"
        )
    if len(problems) > _SHOWN_NOTES:
        console.print(f"  ... and {len(problems) - _SHOWN_NOTES} more (--format json lists them all)")
    for note in result.notes[:_SHOWN_NOTES]:
        console.print(f"  {note}")
    if len(result.notes) > _SHOWN_NOTES:
        console.print(f"  ... and {len(result.notes) - _SHOWN_NOTES} more notes (--format json)")
    if out is not None:
        console.print(f"trace rows in {out / 'traces'} (run id {run_id})")


def _as_json(pcap, ports, result, summaries, out, run_id) -> dict:
    return {
        "file": str(pcap),
        "ports": list(ports),
        "exchanges": len(result.exchanges),
        "outcomes": dict(Counter(e.outcome for e in result.exchanges)),
        "connections": result.connections,
        "segments": result.segments,
        "retransmitted_bytes": result.retransmitted_bytes,
        "out_of_order_segments": result.out_of_order_segments,
        "lost_bytes": result.lost_bytes,
        "skipped_bytes": result.skipped_bytes,
        "apis": [summary.as_dict() for summary in summaries],
        "problems": [
            {
                "packet": e.first_packet,
                "client": e.client,
                "server": e.server,
                "api_key": e.api_key,
                "api_version": e.api_version,
                "correlation_id": e.correlation_id,
                "outcome": e.outcome,
                "notes": list(e.notes),
            }
            for e in result.exchanges
            if e.outcome != "pass"
        ],
        "notes": [str(note) for note in result.notes],
        "traces": None if out is None else str(out / "traces"),
        "run_id": run_id if out is not None else None,
    }
