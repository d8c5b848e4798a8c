"""``kconform chaos``: scenarios from the catalogue against a target behind Toxiproxy, with a progress
display and a verdict table; the exit code is 1 unless every scenario that ran passed (a promise broken,
a run that failed, or faults that never reached the client), or when none ran. A scenario the target
cannot run as written (on a docker cluster, a cut of one directed replication link) is shown as
skipped, with the reason, and is no pass. ``--replay DIR`` runs the checkers again on the records a run
left (no cluster, no network) and prints the same table with the same exit code; a record that cannot
be read is exit code 2."""

from __future__ import annotations

import time
from pathlib import Path

import click

from .target_config import broker_config_option, target_config_option


@click.command()
@click.option(
    "--target",
    default="reference",
    show_default=True,
    help="reference, reference:N (a replicated cluster), docker:VERSION:N (Apache Kafka in containers, "
    "a controller and N >= 2 brokers) or rdkafka-mock[:BROKERS]",
)
@click.option(
    "--catalogue",
    "catalogue_name",
    type=click.Choice(["default", "replication"]),
    default=None,
    help="the scenario catalogue (default: replication on a reference:N or docker:VERSION:N cluster, "
    "else default)",
)
@click.option(
    "--scenario", "names", multiple=True, help="a scenario name (repeatable); default: all for the target"
)
@click.option("--duration", default="20s", show_default=True, help="length of each scenario's run (ms, s, m)")
@click.option("--seed", default=0, show_default=True)
@click.option(
    "--toxiproxy",
    "toxiproxy_url",
    default=None,
    help="a Toxiproxy server's URL (default: toxiproxy-server on PATH, else the embedded one; a docker "
    "cluster runs its own)",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="run directory (default: ./kconform-runs/chaos-<time>)",
)
@target_config_option
@broker_config_option
@click.option("--list", "list_only", is_flag=True, help="list the catalogue and exit")
@click.option(
    "--replay",
    "replay_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="judge the histories a run left in DIR (a run directory, or one of its replay/<scenario>/) again",
)
def chaos(
    target, catalogue_name, names, duration, seed, toxiproxy_url, out, target_config, broker_config,
    list_only, replay_dir,
) -> None:  # fmt: skip
    """Run chaos scenarios and judge every history with the checkers. With --target-config (and
    --broker-config) a single reference broker serves the scenarios' clients on a secured listener."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from kconform.faults.schedule import ScheduleError, parse_duration

    from ..chaos.scenario_set import docker_cluster_of, parse_target, run_chaos
    from ..chaos.scenarios import load_catalogue

    console = Console(stderr=True)
    if replay_dir is not None:
        replay(replay_dir, names, console)
        return
    try:
        kind, _ = parse_target(target)
        docker = docker_cluster_of(target)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--target") from None
    if docker is not None and toxiproxy_url is not None:
        raise click.BadParameter(
            f"{target} runs its own Toxiproxy container on the cluster's network", param_hint="--toxiproxy"
        )
    catalogue = load_catalogue(name=catalogue_name or ("replication" if kind == "cluster" else "default"))
    if list_only:
        table = Table(title="kconform chaos scenarios")
        for column in ("scenario", "workload", "targets", "promise"):
            table.add_column(column)
        for s in catalogue.values():
            table.add_row(s.name, s.workload, ", ".join(s.targets), s.promise)
        Console().print(table)
        return
    try:
        seconds = parse_duration(duration)
    except (ValueError, ScheduleError) as exc:
        raise click.BadParameter(str(exc)) from None
    if seconds < 4:
        raise click.BadParameter(
            "a scenario needs at least 4s (faults, then a quiet tail)", param_hint="--duration"
        )
    unknown = [n for n in names if n not in catalogue]
    if unknown:
        raise click.BadParameter(
            f"unknown scenario(s) {', '.join(unknown)}; see kconform chaos --list", param_hint="--scenario"
        )
    chosen = [catalogue[n] for n in names] if names else [s for s in catalogue.values() if s.allowed_on(kind)]
    skipped = [s.name for s in chosen if not s.allowed_on(kind)]
    if skipped:
        raise click.BadParameter(f"{', '.join(skipped)} do not run on {kind}", param_hint="--scenario")
    broker_properties = _secured_target(kind, target, target_config, broker_config)
    if toxiproxy_url is not None:
        _check_toxiproxy(toxiproxy_url)
    out = out or Path("kconform-runs") / time.strftime("chaos-%Y%m%d-%H%M%S")

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[verdict]}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        tasks = {s.name: progress.add_task(s.name, total=1.0, verdict="waiting") for s in chosen}
        results = run_chaos(
            target,
            chosen,
            duration=seconds,
            out=out,
            seed=seed,
            toxiproxy_url=toxiproxy_url,
            client_properties=target_config,
            broker_properties=broker_properties,
            on_start=lambda s: progress.update(tasks[s.name], verdict="running"),
            on_tick=lambda s, f: progress.update(tasks[s.name], completed=f),
            on_result=lambda r: progress.update(tasks[r.scenario], completed=1.0, verdict=r.verdict),
        )

    show_results(results, f"kconform chaos on {target} ({duration} each)", console)
    console.print(f"run directory: {out} (chaos.json, traces/, replay/)")
    if failed(results):
        raise SystemExit(1)


def _secured_target(kind: str, target: str, client: dict, broker: dict) -> dict[str, str]:
    """The broker properties for a secured run, checked before anything starts: chaos secures reference
    brokers (kconform starts them with a listener of the clients' security.protocol; on reference:N the
    brokers replicate over it too, so the broker config gives their own login)."""
    from kconform.reference_broker.cli_errors import UsageExit

    from ..chaos.scenario_set import docker_cluster_of
    from ..targets.base import TargetError
    from ..targets.client_listener import checked_broker_properties

    if not client and not broker:
        return {}
    if kind not in ("reference", "cluster") or docker_cluster_of(target) is not None:
        raise UsageExit(
            f"--target-config/--broker-config secure reference brokers (reference[:N]), not {target}"
        )
    try:
        checked_broker_properties(client.get("security.protocol", "PLAINTEXT"), broker, target)
    except TargetError as exc:
        raise UsageExit(str(exc)) from None
    return broker


def _check_toxiproxy(url: str) -> None:
    """A --toxiproxy that does not answer is one ``Error:`` line and exit 2 before any target starts."""
    from kconform.faults.toxiproxy import open_toxiproxy
    from kconform.reference_broker.cli_errors import UsageExit

    try:
        with open_toxiproxy(url):
            pass
    except (RuntimeError, OSError, ValueError) as exc:
        raise UsageExit(str(exc)) from None


def failed(results) -> bool:
    """A scenario that ran and did not pass, or none that ran: skipped ones prove nothing either way."""
    ran = [r for r in results if r.verdict != "skipped"]
    return not ran or any(r.verdict != "pass" for r in ran)


def replay(directory: Path, names, console) -> None:
    """The checkers again on a run's records: the live run's table and exit code, or exit code 2 with
    what is wrong with the records."""
    from ..chaos.replay import ReplayError, load_records
    from ..chaos.runner import judge

    try:
        records = load_records(directory)
    except ReplayError as exc:
        raise click.BadParameter(str(exc), param_hint="--replay") from None
    recorded = [r.scenario.name for r in records]
    unknown = [n for n in names if n not in recorded]
    if unknown:
        raise click.BadParameter(
            f"{', '.join(unknown)} not recorded in {directory}; it holds {', '.join(recorded)}",
            param_hint="--scenario",
        )
    results = [judge(r) for r in records if not names or r.scenario.name in names]
    first = records[0]
    show_results(results, f"kconform chaos on {first.target} ({first.duration:g}s each), replayed", console)
    console.print(f"replayed from: {directory}")
    if any(r.verdict != "pass" for r in results):
        raise SystemExit(1)


def show_results(results, title: str, console) -> None:
    """The verdict table, then what broke, what was allowed and why, and runs that prove nothing."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    table.add_column("scenario", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for column in ("ok/fail/info", "felt as", "violations", "allowed, measured"):
        table.add_column(column)
    for r in results:
        if r.verdict == "skipped":
            table.add_row(r.scenario, "[yellow]skipped[/yellow]", "-", "-", "-", "-")
            continue
        ops = r.operations
        colour = {"pass": "green", "violation": "red"}.get(r.verdict, "yellow")
        table.add_row(
            r.scenario,
            f"[{colour}]{r.verdict}[/{colour}]",
            f"{ops.get('ok', 0)}/{ops.get('fail', 0)}/{ops.get('info', 0)}",
            f"{r.bites} {r.stats.get(r.bites, 0)}",
            ", ".join(f"{v.anomaly} {v.count}" for v in r.violations) or "-",
            ", ".join(f"{k} {n}" for k, n in r.measured.items()) or "-",
        )
    Console().print(table)
    for r in results:
        if r.verdict == "skipped":
            console.print(f"[yellow]{r.scenario}: skipped: {r.reason}[/yellow]")
            continue
        if r.error:
            console.print(f"[red]{r.scenario}: {r.error}[/red]")
        for v in r.violations:
            console.print(f"[red]{r.scenario}: {v.anomaly} x{v.count}: {v.detail} ({v.reason})[/red]")
        for v in r.verdicts:
            if v.allowed and v.count:
                console.print(f"{r.scenario}: {v.anomaly} x{v.count} {v.reason}")
        if r.verdict in ("faults-did-not-bite", "faults-not-applied", "no-progress"):
            console.print(
                f"[yellow]{r.scenario}: {r.verdict}: the run proves nothing (a longer --duration "
                f"gives the faults more chances)[/yellow]"
            )
