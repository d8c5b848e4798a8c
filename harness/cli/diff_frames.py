"""``kconform diff-frames``: the raw-bytes differential. The same malformed and borderline frames go to
two targets, and what became of each (an answer and its error code, a closed connection, silence, a
crash) is compared."""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack
from pathlib import Path

import click

from .diff import TargetProblem, _start
from .target_config import broker_config_option, target_config_option


@click.command("diff-frames")
@click.option("--a", "a_spec", default="reference", show_default=True, help="first target")
@click.option("--b", "b_spec", default="rdkafka-mock", show_default=True, help="second target")
@target_config_option
@broker_config_option
@click.option(
    "--frames", default=300, show_default=True, type=click.IntRange(min=1), help="frames to send to each"
)
@click.option("--seed", default=0, show_default=True, help="the same seed builds the same frames")
@click.option(
    "--timeout",
    "reply_timeout",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0.05),
    help="seconds to wait for each target's answer to a frame",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="run directory (default: ./kconform-runs/frames-<time>)",
)
def diff_frames(a_spec, b_spec, target_config, broker_config, frames, seed, reply_timeout, out) -> None:
    """Send the same malformed frames to two targets and compare their fates. Exit 0: the same fates;
    1: differences found; 2: bad usage or a target that cannot be used."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..diff.frame_runner import run_frame_differential
    from ..diff.frames import FrameSpaceError
    from ..targets.base import TargetError

    out = out or Path("kconform-runs") / time.strftime("frames-%Y%m%d-%H%M%S")
    console = Console(stderr=True)
    with ExitStack() as stack:
        a = _start(stack, a_spec, target_config, broker_config)
        b = _start(stack, b_spec, target_config, broker_config)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[found]} kinds of difference"),
            console=console,
        ) as progress:
            task = progress.add_task(f"{a.name} vs {b.name}", total=frames, found=0)

            def advance(done: int, total: int, found: int) -> None:
                progress.update(task, completed=done, found=found)

            try:
                result = run_frame_differential(
                    a, b, out, frames=frames, seed=seed, reply_timeout=reply_timeout, progress=advance
                )
            except TargetError as exc:
                raise TargetProblem(f"{exc} (the frames sent so far are in {out})") from None
            except FrameSpaceError as exc:
                raise TargetProblem(str(exc)) from None
            except OSError as exc:
                raise TargetProblem(f"cannot write the run to {out}: {exc}") from None
    _print_result(result)
    sys.exit(1 if result.differences else 0)


def _print_result(result) -> None:
    from rich.console import Console
    from rich.table import Table

    a_name, b_name = result.targets
    table = Table(
        title=f"{a_name} (a) vs {b_name} (b): {result.frames_sent} frames, seed {result.seed}, "
        f"{sum(g.count for g in result.differences.values())} with different fates",
        caption=f"details and an example frame (hex) of each in {result.summary_path}",
    )
    for column in ("mutation", "API", "a", "b", "frames", "example"):
        table.add_column(column, overflow="fold")
    for group in sorted(result.differences.values(), key=lambda g: (g.mutation, g.api_name, -g.count)):
        example = group.example
        where = "" if example.api_name == "no-header" else f"v{example.api_version}: "
        table.add_row(group.mutation, group.api_name, *group.fates, str(group.count), where + example.detail)
    Console(width=max(Console().width, 160)).print(table)
    for crash in result.crashes:
        Console(stderr=True).print(
            f"{crash['target']} crashed on frame {crash['frame']} ({crash['description']}): {crash['report']}"
        )
