"""``kconform diff`` (a differential campaign between two targets) and ``kconform repro`` (replay a
stored case on any pair of targets)."""

from __future__ import annotations

import asyncio
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import click


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


def _start(stack: ExitStack, spec: str):
    from ..targets.base import TargetError
    from ..targets.registry import make_target

    try:
        target = make_target(spec)
        stack.enter_context(target)
    except TargetError as exc:
        raise click.ClickException(str(exc)) from exc
    return target


@click.command()
@click.option("--a", "a_spec", default="reference", show_default=True, help="first target")
@click.option("--b", "b_spec", default="rdkafka-mock", show_default=True, help="second target")
@click.option("--examples", default=200, show_default=True, help="generated cases to run")
@click.option("--seed", default=0, show_default=True, help="the same seed draws the same cases")
@click.option("--apis", default=None, help="only these APIs (names or keys, comma-separated)")
@click.option("--no-shrink", is_flag=True, help="report differences without shrinking them")
@click.option("--resume", is_flag=True, help="continue the run in --out (its traces and run id)")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="run directory (default: ./kconform-runs/diff-<time>)",
)
def diff(a_spec, b_spec, examples, seed, apis, no_shrink, resume, out) -> None:
    """Run generated operation sequences on two targets and report every difference."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from ..diff.cases import run_campaign

    wanted = _parse_apis(apis)
    out = out or Path("kconform-runs") / time.strftime("diff-%Y%m%d-%H%M%S")
    console = Console(stderr=True)
    with ExitStack() as stack:
        a = _start(stack, a_spec)
        b = _start(stack, b_spec)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[found]} differences"),
            console=console,
        ) as progress:
            task = progress.add_task(f"{a.name} vs {b.name}", total=examples, found=0)

            def advance(done: int, total: int, found: int) -> None:
                progress.update(task, completed=min(done, total), found=found)

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
    table = Table(
        title=f"{a.name} vs {b.name}: {result.cases} cases, {result.operations} operations, "
        f"{result.pairs_compared} pairs compared, {len(result.found)} differences"
    )
    for column in ("signature", "count", "a", "b", "repro"):
        table.add_column(column, overflow="fold")
    for found in sorted(result.found.values(), key=lambda f: f.signature):
        repro = f"kconform repro {out / 'cases' / found.case_id}.json" if found.case_id else ""
        example = found.example or {}
        table.add_row(
            found.signature, str(found.count), str(example.get("a"))[:40], str(example.get("b"))[:40], repro
        )
    Console().print(table)
    console.print(f"traces and summary.json in {out}")
    sys.exit(1 if result.found else 0)


@click.command()
@click.argument("case", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--a", "a_spec", default=None, help="first target (default: the case's own)")
@click.option("--b", "b_spec", default=None, help="second target (default: the case's own)")
def repro(case, a_spec, b_spec) -> None:
    """Replay a stored case on two targets and show every difference (exit 1 if any)."""
    from rich.console import Console

    from ..diff.cases import load_case
    from ..diff.engine import DiffEngine

    try:
        operations, data = load_case(case)
    except (ValueError, KeyError, TypeError) as exc:
        raise click.ClickException(f"{case} is not a kconform case file: {exc}") from exc
    targets = data.get("targets") or ["reference", "rdkafka-mock"]
    console = Console()
    with ExitStack() as stack:
        a = _start(stack, a_spec or targets[0])
        b = _start(stack, b_spec or targets[1])
        engine = DiffEngine(a, b)
        result = asyncio.run(_run(engine, operations))
    console.print(f"case {case.name}: {len(operations)} operations on {a.name} and {b.name}")
    if data.get("signature"):
        console.print(f"stored for: {data['signature']}")
    for index, op in enumerate(operations):
        console.print(f"  {index}: {op}")
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
        return await engine.run_case(operations, "repro")
    finally:
        await engine.close()
