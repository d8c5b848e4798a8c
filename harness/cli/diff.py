"""``kconform diff`` (a differential campaign between two targets) and ``kconform repro`` (replay a
stored case on any pair of targets)."""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

import click

from .target_config import broker_config_option, target_config_option


def _parse_apis(text: str | None) -> set[int] | None:
    if not text:
        return None
    from kconform.codecs import api_schemas

    by_name = {s.name.lower(): s.api_key for s in api_schemas()}
    keys = set()
    for item in text.split(","):
        item = item.strip()
        if item.isdigit():
            keys.add(int(item))
        elif item.lower() in by_name:
            keys.add(by_name[item.lower()])
        else:
            raise click.BadParameter(f"unknown API {item!r}: give API names (Produce, Fetch) or keys (0, 1)")
    return keys


class TargetProblem(click.ClickException):
    """A target that cannot be started or reached: exit 2, like a usage error, never 1 ("differences")."""

    exit_code = 2


def _at_least_one(_ctx: click.Context, param: click.Parameter, value: str | int) -> int:
    """A count of cases: a whole number >= 1, else one ``Error:`` line and exit 2 (no usage block)."""
    from kconform.reference_broker.cli_errors import UsageExit

    try:
        count = int(value)
    except ValueError:
        raise UsageExit(f"--{param.name} takes a whole number of cases, got {value!r}") from None
    if count < 1:
        raise UsageExit(f"--{param.name} must be at least 1, got {count}")
    return count


def _start(
    stack: ExitStack,
    spec: str,
    properties: dict[str, str] | None = None,
    broker: dict[str, str] | None = None,
):
    from ..targets.base import TargetError
    from ..targets.registry import make_target

    try:
        target = make_target(spec, properties, broker)
        stack.enter_context(target)
    except TargetError as exc:
        raise TargetProblem(str(exc)) from exc
    return target


@click.command()
@click.option("--a", "a_spec", default="reference", show_default=True, help="first target")
@click.option("--b", "b_spec", default="rdkafka-mock", show_default=True, help="second target")
@target_config_option
@broker_config_option
@click.option(
    "--examples", default=200, show_default=True, callback=_at_least_one, help="generated cases to run"
)
@click.option("--seed", default=0, show_default=True, help="the same seed draws the same cases")
@click.option("--apis", default=None, help="only these APIs (names or keys, comma-separated)")
@click.option("--no-shrink", is_flag=True, help="report differences without shrinking them")
@click.option(
    "--resume",
    is_flag=True,
    help="finish the run in --out (its examples, seed and APIs; its traces appended to)",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="run directory (default: ./kconform-runs/diff-<time>)",
)
def diff(a_spec, b_spec, target_config, broker_config, examples, seed, apis, no_shrink, resume, out) -> None:
    """Run generated operation sequences on two targets and report every cause of difference, with who
    deviates from Apache Kafka. Exit 0: no difference; 1: differences found; 2: bad usage or a target
    that cannot be used."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..diff.cases import run_campaign
    from ..diff.drawing import operation_sequences

    wanted = _parse_apis(apis)
    try:
        operation_sequences(wanted)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--apis") from None
    if resume and out is None:
        raise click.UsageError("--resume needs the --out of the run to finish")
    out = out or Path("kconform-runs") / time.strftime("diff-%Y%m%d-%H%M%S")
    console = Console(stderr=True)
    with ExitStack() as stack:
        a = _start(stack, a_spec, target_config, broker_config)
        b = _start(stack, b_spec, target_config, broker_config)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[found]} causes"),
            console=console,
        ) as progress:
            task = progress.add_task(f"{a.name} vs {b.name}", total=examples, found=0)

            def advance(done: int, total: int, found: int) -> None:
                progress.update(task, total=total, completed=min(done, total), found=found)

            result = run_campaign(
                a,
                b,
                out,
                examples=examples,
                seed=seed,
                apis=wanted,
                shrink=not no_shrink,
                resume=resume,
                progress=advance,
            )
    _print_causes(result, out)
    sys.exit(1 if result.causes else 0)


def _print_causes(result, out: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    a_name, b_name = result.targets
    coverage = result.coverage()
    table = Table(
        title=f"{a_name} vs {b_name}: {result.cases} cases, {result.pairs_compared} request pairs compared, "
        f"{len(result.causes)} causes of difference",
        caption=f"(API, version) pairs both targets offer: {coverage['exercised']} of "
        f"{coverage['offered_by_both']} exercised; details in {out / 'summary.json'}",
    )
    for column in ("cause", "verdict", "seen", "repro"):
        table.add_column(column, overflow="fold")
    for cause in sorted(result.causes.values(), key=lambda c: c.number):
        table.add_row(
            cause.title(a_name, b_name),
            (cause.verdict or {}).get("text", ""),
            f"{cause.exchanges} exchanges in {len(cause.cases)} cases",
            f"kconform repro {out / 'cases' / cause.case_file}.json",
        )
    Console(width=max(Console().width, 160)).print(table)
    for note in result.notes:  # configuration differences, a run cut short
        Console().print(note)
    for target, api_key, version, message in result.crashes:
        Console(stderr=True).print(f"{target} crashed on API {api_key} v{version}: {message}")


@click.command()
@click.argument("case", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--a", "a_spec", default=None, help="first target (default: the case's own)")
@click.option("--b", "b_spec", default=None, help="second target (default: the case's own)")
@target_config_option
@broker_config_option
def repro(case, a_spec, b_spec, target_config, broker_config) -> None:
    """Replay a stored case on two targets and show every difference: exit 0 none, 1 some, 2 a bad case
    file or target. Each replay uses names of its own, so replaying twice gives the same answers."""
    from rich.console import Console

    from ..diff.cases import load_case
    from ..diff.engine import DiffEngine

    try:
        operations, data = load_case(case)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    targets = data.get("targets") or ["reference", "rdkafka-mock"]
    console = Console()
    with ExitStack() as stack:
        a = _start(stack, a_spec or targets[0], target_config, broker_config)
        b = _start(stack, b_spec or targets[1], target_config, broker_config)
        engine = DiffEngine(a, b)
        result = asyncio.run(_run(engine, operations))
    console.print(f"case {case.name}: {len(operations)} operations on {a.name} and {b.name}")
    if data.get("title") or data.get("signature"):
        console.print(f"stored for: {data.get('title') or data['signature']}")
    if (data.get("verdict") or {}).get("text"):
        console.print(f"verdict: {data['verdict']['text']}")
    for index, op in enumerate(operations):
        span = engine.version_range(op.api_key)
        console.print(f"  {index}: {op.describe(op.version(*span)) if span else op}")
    for divergence in result.divergences:
        d = divergence.difference
        console.print(
            f"  op {divergence.op_index}: {divergence.signature}: {a.name}={d.a!r} {b.name}={d.b!r}"
        )
    for index, why in result.skipped:
        console.print(f"  op {index} skipped: {why}")
    sys.exit(1 if result.divergences else 0)


async def _run(engine, operations):
    try:
        return await engine.run_case(operations, "repro", namespace=f"repro-{uuid.uuid4().hex[:10]}")
    finally:
        await engine.close()
