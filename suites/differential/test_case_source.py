"""Cases are drawn in a process of their own: it must draw exactly what drawing in the engine's process
draws, stop when the run stops reading, and fail with the drawing's own words."""

from __future__ import annotations

import pytest

from kconform.harness.diff.case_files import operations_json
from kconform.harness.diff.case_source import DrawnCases, draw_cases


@pytest.mark.parametrize(("seed", "apis"), [(1, None), (6, None), (2, {0, 1, 2, 3, 23})])
def test_the_drawing_process_draws_what_the_engine_process_would(seed, apis):
    here: list[list[dict]] = []
    draw_cases(seed, 60, apis, here.append)
    with DrawnCases(seed, 60, apis) as drawn:
        there = list(drawn)
    assert [entries for _, entries in there] == here
    # and the operations rebuilt from each line are the ones it describes
    assert all(operations_json(case) == entries for case, entries in there)


def test_a_run_that_stops_reading_ends_the_drawing():
    with DrawnCases(3, 100_000, None) as drawn:
        first = next(iter(drawn))
        process = drawn._process
    assert first[0]
    assert process.poll() is not None  # killed on leaving, not left drawing 100,000 cases


def test_a_drawing_that_fails_says_why():
    with pytest.raises(RuntimeError, match="drawing cases failed: .*no operation sends"):
        with DrawnCases(1, 5, {18}) as drawn:
            list(drawn)
