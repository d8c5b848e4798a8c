"""Cases drawn in a process of their own, one JSON line each, while the engine runs the ones before.

Drawing a case with Hypothesis costs a few milliseconds of Python, about as long as both brokers take to
answer it. What a case holds never depends on how earlier cases went (only the generate phase runs and
the test never fails), so the drawing can run ahead on another core. The drawing process is fresh every
run, so the same seed draws the same cases whatever ran before in the engine's process. The pipe
between the two bounds how far ahead it gets; a run that stops early closes it and the drawing ends.

Run as ``python -m kconform.harness.diff.case_source SEED EXAMPLES [API_KEY ...]``."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

__all__ = ["DrawnCases", "draw_cases"]


def draw_cases(seed: int, examples: int, apis: set[int] | None, emit) -> None:
    """Draw ``examples`` cases with ``seed`` and hand each, as JSON-ready operations, to ``emit``."""
    from .case_files import operations_json
    from .drawing import operation_sequences

    @hypothesis_seed(seed)  # the same seed draws the same cases
    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(operation_sequences(apis))
    def draw(case):
        emit(operations_json(case))

    draw()


class DrawnCases:
    """The cases of one run, read from a drawing process: iterate for ``(operations, as JSON)`` pairs.
    Use as a context manager; leaving it ends the drawing however far it got."""

    def __init__(self, seed: int, examples: int, apis: set[int] | None) -> None:
        self._args = [str(seed), str(examples), *(str(k) for k in sorted(apis or ()))]
        self._process: subprocess.Popen | None = None
        self._stderr = None

    def __enter__(self) -> DrawnCases:
        self._stderr = tempfile.TemporaryFile("w+")  # a file, not a pipe: it can never fill and block
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, *self._args],
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        return self

    def __iter__(self) -> Iterator[tuple[list, list[dict]]]:
        from .case_files import operations_from_json

        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            entries = json.loads(line)
            yield operations_from_json(entries), entries
        if self._process.wait() != 0:
            self._stderr.seek(0)
            said = self._stderr.read().strip().splitlines()
            last = said[-1] if said else f"exit status {self._process.returncode}"
            raise RuntimeError(f"drawing cases failed: {last}")

    def __exit__(self, *exc_info) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()
        self._stderr.close()


def _main(argv: list[str]) -> int:
    seed, examples, *apis = (int(a) for a in argv)

    def emit(entries: list[dict]) -> None:
        sys.stdout.write(json.dumps(entries, separators=(",", ":")) + "\n")
        sys.stdout.flush()  # the engine is waiting for it

    try:
        draw_cases(seed, examples, set(apis) or None, emit)
    except BrokenPipeError:  # the run stopped reading: it has all it wants
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
