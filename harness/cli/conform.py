"""``kconform conform``: the conformance catalogue against one target, with a per-API ledger and a
dashboard page (the rules grid). Exit code 0 when every test that ran passed or failed only where that
kind of target is known to fail (``harness/conform/expected/<kind>/*.toml``), 1 on anything else (a
failure or error not expected, or an expected failure that passed: news either way), 2 when the target
cannot be started or reached."""

from __future__ import annotations

import collections
import time
from contextlib import ExitStack
from pathlib import Path

import click

from .diff import _start
from .target_config import broker_config_option, target_config_option


@click.command()
@click.option(
    "--target",
    default="reference",
    show_default=True,
    help="reference, reference:N, rdkafka-mock, tansu, docker[:VERSION] or bootstrap:HOST:PORT "
    "(a secured one: bootstrap:HOST:PORT@security.protocol=SSL,... or --target-config)",
)
@target_config_option
@broker_config_option
@click.option(
    "--versions",
    "pick",
    type=click.Choice(["all", "ends"]),
    default="all",
    show_default=True,
    help="every version the rule and the target share, or the lowest and the highest of them",
)
@click.option("--rule", "only", multiple=True, help="only rules whose id starts with this (repeatable)")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="run directory (default: ./kconform-runs/conform-<time>)",
)
@click.option(
    "--report/--no-report",
    default=True,
    show_default=True,
    help="also write the dashboard page (report/index.html: the rules grid and the ledger)",
)
@click.option(
    "--engine",
    type=click.Choice(["spark", "duckdb"]),
    default="spark",
    show_default=True,
    help="what rolls the rule rows up for the page; duckdb is the quick path for a laptop",
)
@click.option(
    "--previous",
    type=click.Path(path_type=Path),
    default=None,
    help="an earlier report's folder, to show which rules changed since",
)
@click.option("--list", "list_only", is_flag=True, help="list the catalogue and exit")
def conform(
    target, target_config, broker_config, pick, only, out, report, engine, previous, list_only
) -> None:
    """Check a target against Kafka's rules, API by API."""
    from rich.console import Console

    from ..conform.catalogue import catalogue
    from ..conform.run import run_conformance

    console = Console(stderr=True)
    rules = catalogue()
    if list_only:  # one rule a line, tab-separated, whatever the terminal's width
        click.echo(f"# {len(rules)} rules: id, API, versions, Kafka source, rule")
        for r in rules.values():
            click.echo("\t".join((r.id, r.api_name, f"{r.versions[0]}-{r.versions[1]}", r.source, r.text)))
        return
    unknown = [prefix for prefix in only if not any(r.startswith(prefix) for r in rules)]
    if unknown:
        raise click.BadParameter(f"no rule id starts with {', '.join(unknown)}", param_hint="--rule")
    if report and previous is not None:  # found out before the run, not after it
        from kconform.spark_reports.build import load_previous
        from kconform.spark_reports.runs import ReportInputError

        try:
            load_previous(previous)
        except ReportInputError as exc:
            raise click.BadParameter(str(exc), param_hint="--previous") from None
    out = out or Path("kconform-runs") / time.strftime("conform-%Y%m%d-%H%M%S")
    with ExitStack() as stack:
        started = _start(stack, target, target_config, broker_config)
        with console.status(f"running the catalogue against {target}"):
            result = run_conformance(started, out=out, pick=pick, only=tuple(only))
    show_ledger(result, console)
    for surprise in result.surprises[:40]:
        console.print(f"[red]unexpected[/red] {surprise.describe()}")
    if len(result.surprises) > 40:
        console.print(f"... and {len(result.surprises) - 40} more (all in {result.files['outcomes']})")
    console.print(f"run directory: {out} (rules/, outcomes.jsonl, ledger.json, conform.json)")
    if report:
        _write_report(out, engine, previous, console)
    if result.surprises:
        raise SystemExit(1)


def _write_report(out: Path, engine: str, previous: Path | None, console) -> None:
    from rich.markup import escape

    from kconform.spark_reports.build import build_dashboard
    from kconform.spark_reports.runs import ReportInputError
    from kconform.spark_reports.session import SparkUnavailable

    try:
        with console.status("writing the dashboard page"):
            page = build_dashboard([out], out / "report", previous=previous, engine=engine)
    except (ReportInputError, SparkUnavailable) as exc:
        console.print(f"[red]error:[/red] the report could not be written: {escape(str(exc))}")
        raise SystemExit(2) from None
    console.print(f"dashboard: {page}")


def show_ledger(result, console) -> None:
    from rich.table import Table

    book = result.ledger
    counts = collections.Counter(o.outcome for o in result.outcomes)
    title = (
        f"{result.target}: {counts['pass']} passed, {counts['fail']} failed, {counts['error']} errors, "
        f"{counts['not-applicable']} not applicable, of {len(result.outcomes)} tests "
        f"from {result.rules} rules"
        + (f" ({counts['not-run']} not run: budget spent)" if counts["not-run"] else "")
    )
    table = Table(title=title)
    for column in ("API", "routed", "versions", "passed / ran", "semantics"):
        table.add_column(column)
    unrouted = 0
    for name, row in book["apis"].items():
        ran = row["passed"] + row["failed"]
        if not row["routed"] and not ran:
            unrouted += 1
            continue
        versions = f"{row['versions'][0]}-{row['versions'][1]}" if row["versions"] else "-"
        table.add_row(
            name, "yes" if row["routed"] else "no", versions, f"{row['passed']} / {ran}", row["semantics"]
        )
    console.print(table)
    if unrouted:
        console.print(f"{unrouted} APIs the target does not serve: their rules are not applicable there")
