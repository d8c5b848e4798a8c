"""The ``kconform bench`` group."""

from __future__ import annotations

import click


@click.group()
def bench() -> None:
    """Benchmarks that time kconform against peers in the same run (ratio > 1: ours is better)."""


@bench.command("codecs")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per comparison, one a line")
@click.option("--quick", is_flag=True, help="fewer repetitions (for smoke tests)")
def codecs_bench(as_json: bool, quick: bool) -> None:
    """Codecs against kio, kafka-python and aiokafka."""
    from .codecs_bench import run

    run(as_json=as_json, quick=quick)


@bench.command("broker")
@click.option("--records", default=1_000_000, show_default=True, help="records per acks setting")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per comparison, one a line")
def broker_bench(records: int, as_json: bool) -> None:
    """The reference broker against librdkafka's mock cluster, same confluent-kafka load."""
    from .broker_bench import run

    run(records=records, as_json=as_json)


@bench.command("bombs")
@click.option("--bombs", type=click.IntRange(min=1), default=8, show_default=True, help="bombs, pipelined")
@click.option(
    "--records",
    type=click.IntRange(min=1),
    default=None,
    help="records per bomb  [default: about 1 MB of the codec: 1,300,000 for zstd]",
)
@click.option(
    "--codec", type=click.Choice(["zstd", "gzip", "lz4", "snappy"]), default="zstd", show_default=True
)
@click.option(
    "--kind",
    type=click.Choice(["kept", "rebuilt"]),
    default="kept",
    show_default=True,
    help="rebuilt: the topic's compression.type differs, so the broker recompresses every bomb",
)
@click.option("--json", "as_json", is_flag=True, help="one JSON object with every figure")
def bombs_bench(bombs: int, records: int | None, codec: str, kind: str, as_json: bool) -> None:
    """Compression bombs against the reference broker: ApiVersions latency on another connection and the
    broker's memory while they are read (goal: p99 < 100 ms, RSS within 32 MB of the baseline)."""
    from .bombs_bench import run

    if not run(bombs=bombs, records=records, as_json=as_json, codec=codec, kind=kind):
        raise SystemExit(1)


@bench.command("cluster")
@click.option("--records", default=200_000, show_default=True, help="records for the throughput runs")
@click.option("--latency-seconds", default=20.0, show_default=True, help="length of each paced latency run")
@click.option(
    "--kills", default=10, show_default=True, help="partition leader SIGKILLs for the failover window"
)
@click.option("--json", "as_json", is_flag=True, help="one JSON object per comparison, one a line")
def cluster_bench(records: int, latency_seconds: float, kills: int, as_json: bool) -> None:
    """A three-broker cluster (replication factor 3) against a single node and librdkafka's mock:
    throughput, end-to-end latency at a fixed rate, and the failover window after a leader's SIGKILL."""
    from .cluster_bench import run

    run(records=records, latency_seconds=latency_seconds, kills=kills, as_json=as_json)


@bench.command("client")
@click.option("--records", default=1_000_000, show_default=True, help="records to produce and consume")
@click.option("--partitions", default=4, show_default=True, help="partitions of the benchmark topic")
@click.option("--bootstrap", default=None, help="a broker to use instead of a fresh reference broker")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per comparison, one a line")
def client_bench(records: int, partitions: int, bootstrap: str | None, as_json: bool) -> None:
    """Our client against aiokafka and kafka-python: produce, then consume, through one broker."""
    from .client_bench import run

    run(records=records, partitions=partitions, bootstrap=bootstrap, as_json=as_json)


@bench.command("diff")
@click.option(
    "--examples",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="generated cases per campaign",
)
@click.option(
    "--peer", default="rdkafka-mock", show_default=True, help="the target whose differences are shrunk"
)
@click.option("--json", "as_json", is_flag=True, help="one JSON object per comparison, one a line")
def diff_bench(examples: int, peer: str, as_json: bool) -> None:
    """Operations per second and the harness's own time against the brokers' (reference vs reference),
    and shrinking's share of a run with differences (reference vs --peer)."""
    from .diff_bench import run

    run(examples=examples, peer=peer, as_json=as_json)


@bench.command("reports")
@click.option(
    "--rows",
    type=click.IntRange(min=1),
    default=10_000_000,
    show_default=True,
    help="synthetic trace rows to roll up",
)
@click.option("--master", default=None, help="a Spark master URL (default: local[*])")
@click.option(
    "--standalone",
    is_flag=True,
    help="start a standalone Spark cluster here (a Master and a Worker with every core) and roll up on it",
)
@click.option("--worker-memory", default="8g", show_default=True, help="the standalone Worker's memory")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per comparison, one a line")
def reports_bench(rows: int, master: str | None, standalone: bool, worker_memory: str, as_json: bool) -> None:
    """The Spark roll-up against DuckDB over the same synthetic traces (they must agree); with
    ``--standalone`` on a cluster started here, with the peak memory of the cluster and the driver."""
    from .reports_bench import run

    if standalone and master:
        raise click.UsageError("give --master or --standalone, not both")
    run(rows=rows, master=master, as_json=as_json, standalone=standalone, worker_memory=worker_memory)
