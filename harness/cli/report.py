"""``kconform report``: roll run directories up into the dashboard, summary.json and JUnit XML."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.console import Console


@click.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="report folder: index.html, summary.json and junit.xml are written there",
)
@click.option(
    "--previous",
    type=click.Path(path_type=Path),
    default=None,
    help="an earlier report's folder (or its summary.json) to show the difference from",
)
@click.option("--master", default=None, help="a Spark master URL (default: local mode on every core)")
@click.option(
    "--engine",
    type=click.Choice(["spark", "duckdb"]),
    default="spark",
    show_default=True,
    help="what rolls the traces up; duckdb is the quick path for a laptop",
)
@click.option("--title", default="kconform conformance report", show_default=True)
def report(
    runs: tuple[Path, ...], out: Path, previous: Path | None, master: str | None, engine: str, title: str
) -> None:
    """Roll up the traces of RUNS (run directories, or folders of them) into a dashboard."""
    from rich.console import Console
    from rich.markup import escape

    from kconform.spark_reports.build import JUNIT_FILE, SUMMARY_FILE, build_dashboard
    from kconform.spark_reports.runs import ReportInputError
    from kconform.spark_reports.session import SparkUnavailable

    # soft_wrap: a long path in a message stays whole, to be copied.
    console = Console(stderr=True, soft_wrap=True)
    started = time.monotonic()
    with console.status("report", spinner="dots") as status:

        def progress(step: str) -> None:
            console.print(f"[dim]{time.monotonic() - started:6.1f}s[/dim]  {escape(step)}")
            status.update(step)

        try:
            page = build_dashboard(
                runs, out, previous=previous, master=master, engine=engine, progress=progress, title=title
            )
        except (ReportInputError, SparkUnavailable) as exc:
            console.print(f"[red]error:[/red] {escape(str(exc))}")
            raise SystemExit(2) from None
    summary = json.loads((out / SUMMARY_FILE).read_text(encoding="utf-8"))
    _print_summary(Console(soft_wrap=True), summary, page, out / SUMMARY_FILE, out / JUNIT_FILE)


def _print_summary(console: Console, summary: dict, page: Path, summary_file: Path, junit_file: Path) -> None:
    from rich.markup import escape

    totals, changes = summary["totals"], summary["comparison"]
    rate = totals["pass_rate"]
    line = (
        f"{totals['runs']:,} run(s), {totals['exchanges']:,} exchanges, "
        f"pass rate {'–' if rate is None else f'{rate * 100:.2f}%'}; "
        f"{totals['divergence_signatures']:,} divergence signature(s)"
    )
    if changes["has_previous"]:
        line += f" ({totals['new_divergences']:,} new, {totals['fixed_divergences']:,} fixed)"
    line += f"; chaos: {totals['chaos_violations']:,} violation(s) in {totals['chaos_results']:,} result(s)"
    if totals.get("rule_tests"):
        line += (
            f"; rules: {totals['rule_tests_passed']:,} passed of {totals['rule_tests_ran']:,} ran, "
            f"{totals['rule_surprises']:,} not as known"
        )
    console.print(line)
    console.print(f"dashboard  [bold]{escape(str(page))}[/bold] (open it in a browser; it needs no network)")
    console.print(f"summary    {escape(str(summary_file))}")
    console.print(f"junit      {escape(str(junit_file))}")
    console.print(f"compare a later report with this one: --previous {escape(str(page.parent))}")
