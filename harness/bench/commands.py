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
