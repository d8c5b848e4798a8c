"""``kconform cluster``: a replicated reference cluster (one controller, N brokers) as processes on this
machine. It prints the bootstrap address and every process, and stops them all on Ctrl-C (brokers
first, each with a controlled shutdown, then the controller)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import click

from kconform.reference_broker.command_line import parse_overrides

__all__ = ["cluster"]


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--brokers", type=click.IntRange(1, 64), default=3, show_default=True, help="how many brokers")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="one folder per node goes here (controller-0, broker-1, ...); reused on the next start",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="the address every node listens on")
@click.option(
    "--port",
    "first_port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="the controller's port; broker N listens on PORT+N (0: any free ports)",
)
@click.option("--kafka-version", help="the Apache Kafka release every broker answers as")
@click.argument("overrides", nargs=-1)
def cluster(
    brokers: int,
    data_dir: Path,
    host: str,
    first_port: int,
    kafka_version: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Run a reference cluster until Ctrl-C. OVERRIDES are Kafka properties as key=value for every node
    (e.g. min.insync.replicas=2 broker.session.timeout.ms=6000)."""
    from kconform.reference_broker.cluster_processes import CONTROLLER_ID, start_cluster

    props = parse_overrides(overrides)
    ports = {} if first_port == 0 else {n: first_port + n for n in range(brokers + 1)}
    try:
        running = start_cluster(
            data_dir, brokers, overrides=props, kafka_version=kafka_version, host=host, ports=ports
        )
    except RuntimeError as exc:
        raise click.ClickException(f"the cluster did not start: {exc}") from None
    click.echo(f"bootstrap: {running.bootstrap}")
    click.echo(
        f"controller {CONTROLLER_ID}: {running.controller_address} (pid {running.controller.process.pid})"
    )
    for node_id, broker in sorted(running.brokers.items()):
        click.echo(f"broker {node_id}: {broker.bootstrap} (pid {broker.process.pid}, {broker.data_dir})")
    click.echo("Ctrl-C stops every node", err=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    reported: set[int] = set()
    try:
        while not stop.wait(1.0):
            for node in running.nodes():
                if not node.alive() and node.node_id not in reported:
                    reported.add(node.node_id)
                    click.echo(f"node {node.node_id} exited with {node.process.returncode}", err=True)
    finally:
        running.stop()
        click.echo("every node stopped", err=True)
