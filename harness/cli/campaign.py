"""``kconform campaign``: kconform's main job in one command: the conformance catalogue on every target, a
bounded differential campaign and the chaos catalogue against the chosen targets (the replication
catalogue on a replicated cluster such as ``reference:3``), ending with the dashboard."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from .target_config import broker_config_option, target_config_option


@click.command()
@click.option(
    "--targets",
    default=None,
    help="comma-separated targets; the first is compared with each of the others; reference:N (N >= 2) "
    "is a replicated cluster, which runs the replication catalogue [default: reference,rdkafka-mock, "
    "and tansu where its binary is installed]",
)
@click.option(
    "--kafka-version",
    default=None,
    help="the Apache Kafka release the reference broker answers as (default: the newest the codecs cover)",
)
@click.option("--duration", default="8m", show_default=True, help="time budget of the whole campaign (s, m)")
@click.option("--examples", default=100_000, show_default=True, help="upper bound on generated diff cases")
@click.option(
    "--scenario",
    "scenarios",
    multiple=True,
    help="only these chaos scenarios, from either catalogue (repeatable)",
)
@click.option("--no-diff", is_flag=True, help="skip the differential campaign")
@click.option("--no-chaos", is_flag=True, help="skip the chaos catalogue")
@click.option("--no-conform", is_flag=True, help="skip the conformance catalogue")
@click.option("--seed", default=0, show_default=True)
@click.option(
    "--toxiproxy", "toxiproxy_url", default=None, help="a Toxiproxy server's URL (default: embedded)"
)
@click.option("--master", default=None, help="a Spark master URL for the roll-up (default: local mode)")
@click.option(
    "--engine",
    type=click.Choice(["spark", "duckdb"]),
    default="spark",
    show_default=True,
    help="what rolls the traces up",
)
@click.option(
    "--previous",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="an earlier report to compare with (default: the newest campaign beside --out)",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="campaign directory (default: ./kconform-runs/campaign-<time>)",
)
@click.option("--strict", is_flag=True, help="exit 1 when a difference or a broken promise is found")
@target_config_option
@broker_config_option
def campaign(
    targets, kafka_version, duration, examples, scenarios, no_diff, no_chaos, no_conform, seed, toxiproxy_url,
    master, engine, previous, out, strict, target_config, broker_config,
) -> None:  # fmt: skip
    """Run conformance, differential and chaos work against the targets, then write the dashboard."""
    began = time.monotonic()  # the budget is the whole command's, checks and start-up included
    from rich.console import Console
    from rich.table import Table

    from kconform.faults.schedule import ScheduleError, parse_duration

    from ..campaign import (
        CHAOS_CATALOGUES,
        CampaignError,
        chaos_kind,
        default_targets,
        plan_campaign,
        previous_report,
        run_end_to_end,
    )
    from ..chaos.scenarios import load_catalogue
    from ..targets.base import TargetError
    from ..targets.registry import make_target, split_target_list, with_kafka_version
    from ..targets.tansu import find_tansu

    console = Console(stderr=True, soft_wrap=True)  # a message stays one line, to be read or grepped
    optional: tuple[str, ...] = ()  # default targets that give way when the budget cannot fit them
    if targets is None:
        try:
            find_tansu()
        except TargetError as exc:
            listed = default_targets(tansu_installed=False)
            console.print(f"tansu is not among the targets: {exc}", style="yellow", markup=False)
        else:
            listed = default_targets(tansu_installed=True)
            optional = ("tansu",)
    else:
        listed = tuple(split_target_list(targets))
    names = [with_kafka_version(t, kafka_version) for t in listed]

    def plan_for(names: list[str], budget: float):
        return plan_campaign(
            names,
            budget,
            load_catalogue(),
            cluster_catalogue=load_catalogue(name="replication"),
            diff=not no_diff,
            chaos=not no_chaos,
            scenarios=scenarios,
            conform=not no_conform,
        )

    try:
        for name in names:  # a typo is an error now, not minutes later when its part starts
            make_target(name, target_config, broker_config)  # and security it cannot take
        budget = parse_duration(duration)
        try:
            plan = plan_for(names, budget)
        except CampaignError as exc:
            if not optional:
                raise
            names = [n for n in names if n not in optional]
            plan = plan_for(names, budget)
            console.print(f"{', '.join(optional)} left out: {exc}", style="yellow", markup=False)
    except (ScheduleError, TargetError, ValueError) as exc:
        raise click.UsageError(str(exc)) from None
    secured = bool(target_config or broker_config)
    unsecurable = [t for t, _ in plan.chaos if not t.startswith("reference")] if secured else []
    if unsecurable:
        raise click.UsageError(
            f"chaos under --target-config/--broker-config runs on reference brokers (reference[:N]), not "
            f"{', '.join(unsecurable)}: give --no-chaos or other --targets"
        )
    if not plan.diff_pairs and not plan.chaos and not plan.conform:
        raise click.UsageError(
            "nothing to run: give two targets for a diff, or a target with chaos scenarios, or leave "
            "conformance on"
        )
    out = out or Path("kconform-runs") / time.strftime("campaign-%Y%m%d-%H%M%S")
    engine = _preflight(console, engine, out)
    previous = previous or previous_report(out)

    console.print(
        f"[bold]kconform campaign[/bold] in {out}: {len(plan.conform)} conformance run(s) of "
        f"{plan.conform_seconds:.0f}s, {len(plan.diff_pairs)} diff pair(s) of "
        f"{plan.diff_seconds:.0f}s, {plan.scenario_runs} chaos scenario run(s) of "
        f"{plan.scenario_seconds:.0f}s, "
        f"about {plan.estimated_seconds() / 60:.1f} min"
    )
    for target, chosen in plan.chaos:
        catalogue = CHAOS_CATALOGUES[chaos_kind(target)]
        console.print(
            f"chaos {target} ({catalogue} catalogue): {', '.join(chosen)}", markup=False, highlight=False
        )
    for note in plan.notes:
        console.print(f"[yellow]{note}[/yellow]")
    with _RichProgress(console) if console.is_terminal else _LineProgress(console) as progress:
        outcome = run_end_to_end(
            plan,
            out,
            examples=examples,
            seed=seed,
            toxiproxy_url=toxiproxy_url,
            previous=previous,
            master=master,
            engine=engine,
            progress=progress,
            security=(target_config, broker_config),
        )

    out_console = Console()
    if out_console.is_terminal:
        table = Table(title=f"kconform campaign ({outcome.seconds / 60:.1f} min)")
        for column in ("part", "targets", "result", "run directory"):
            table.add_column(column, overflow="fold")
        for part in outcome.parts:
            result = f"[red]{part.error}[/red]" if part.error else part.headline
            table.add_row(part.part, " vs ".join(part.targets), result, str(part.directory))
        out_console.print(table)
    else:  # a log or a pipe: one whole line per part, never cut at a console width
        for part in outcome.parts:
            result = f"error: {part.error}" if part.error else part.headline
            click.echo(f"{part.part}  {' vs '.join(part.targets)}  {result}  {part.directory}")
    console.print(_budget_line(time.monotonic() - began, budget), markup=False, highlight=False)
    if outcome.report_error:
        console.print(f"[red]no dashboard: {outcome.report_error}[/red]")
        raise SystemExit(2)
    console.print(f"dashboard: [bold]{outcome.dashboard}[/bold] (open it in a browser)")
    console.print(f"compare a later campaign with this one: --previous {outcome.dashboard.parent}")
    if any(p.error for p in outcome.parts) or (strict and any(p.failed for p in outcome.parts)):
        raise SystemExit(1)


def _budget_line(seconds: float, budget: float) -> str:
    """How the campaign kept to its budget, saying so when it used its slack (the targets' start and
    the report's engine are not cut short)."""
    if seconds <= budget:
        return f"finished in {seconds:.0f}s of its {budget:.0f}s budget"
    return f"finished in {seconds:.0f}s: {seconds - budget:.0f}s over its {budget:.0f}s budget (slack used)"


def _preflight(console, engine: str, out: Path) -> str:
    """What the campaign needs at its end, checked before any work: an engine that can roll up (Spark
    that cannot start gives way to DuckDB, with a warning) and an out directory it can write. A need
    that cannot be met ends the command now: one line, exit 2."""
    from kconform.spark_reports import session

    try:
        problem = session.spark_problem() if engine == "spark" else None
        engine, warning = session.choose_engine(engine, problem, session.duckdb_installed())
    except ValueError as exc:
        console.print(f"error: no report could be written: {exc}", style="red", markup=False)
        raise SystemExit(2) from None
    if warning:
        console.print(f"warning: {warning}", style="yellow", markup=False)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".kconform-write-check-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        console.print(f"error: --out {out} is not writable: {exc.strerror or exc}", style="red", markup=False)
        raise SystemExit(2) from None
    return engine


class _LineProgress:
    """``CampaignProgress`` as plain lines, for output that is not a terminal (a CI log, a pipe): each
    part's start and end, and its status at most every ``every`` seconds in between."""

    def __init__(self, console, every: float = 30.0, clock=time.monotonic) -> None:
        self._console, self._every, self._clock = console, every, clock
        self._started = clock()
        self._last: dict[str, float] = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def _line(self, text: str) -> None:
        self._console.print(f"{self._clock() - self._started:7.1f}s  {text}", markup=False, highlight=False)

    def part_started(self, part: str, label: str, total: float) -> None:
        self._last[label] = self._clock()
        self._line(f"{label}: started")

    def part_advanced(self, label: str, completed: float, status: str) -> None:
        if self._clock() - self._last.get(label, 0.0) >= self._every:
            self._last[label] = self._clock()
            self._line(f"{label}: {status}")

    def part_finished(self, outcome) -> None:
        label = f"{outcome.part} {' vs '.join(outcome.targets)}"
        self._line(f"{label}: {outcome.error or outcome.headline}")

    def report_step(self, step: str) -> None:
        self._line(f"report: {step}")


class _RichProgress:
    """Draws ``CampaignProgress`` events as rich progress bars, one per part."""

    def __init__(self, console) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[status]}"),
            console=console,
        )
        self._tasks: dict[str, int] = {}
        self._report = None

    def __enter__(self):
        self._progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.__exit__(*exc)

    def part_started(self, part: str, label: str, total: float) -> None:
        self._tasks[label] = self._progress.add_task(label, total=max(total, 1), status="starting")

    def part_advanced(self, label: str, completed: float, status: str) -> None:
        self._progress.update(self._tasks[label], completed=completed, status=status)

    def part_finished(self, outcome) -> None:
        label = f"{outcome.part} {' vs '.join(outcome.targets)}"
        task = self._tasks[label]
        status = outcome.error or outcome.headline
        self._progress.update(task, completed=self._progress.tasks[task].total, status=status[:70])

    def report_step(self, step: str) -> None:
        if self._report is None:
            self._report = self._progress.add_task("report", total=None, status=step)
        else:
            self._progress.update(self._report, status=step)
