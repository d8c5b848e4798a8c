"""Cases are drawn in a process of their own: the same seed draws the same cases every time (a fresh
process each run, whatever ran before in the engine's), the run stops the drawing when it stops
reading, and a drawing that fails says why."""

from __future__ import annotations

import pytest

from kconform.harness.diff.case_files import operations_json
from kconform.harness.diff.case_source import DrawnCases


def drawn(seed: int, examples: int, apis) -> list[list[dict]]:
    with DrawnCases(seed, examples, apis) as cases:
        out = []
        for operations, entries in cases:
            assert operations_json(operations) == entries  # each line rebuilds the operations it describes
            out.append(entries)
    return out


@pytest.mark.parametrize(("seed", "apis"), [(1, None), (2, {0, 1, 2, 3, 23})])
def test_the_same_seed_draws_the_same_cases(seed, apis):
    first = drawn(seed, 60, apis)
    assert len(first) == 60 and first == drawn(seed, 60, apis)
    assert first != drawn(seed + 1, 60, apis)


def test_only_the_apis_asked_for_are_drawn():
    sent = {entry["op"] for case in drawn(4, 40, {3, 23}) for entry in case}
    # and the topic they name is created first (through a side door on a target without CreateTopics)
    assert sent <= {"CreateTopic", "Metadata", "OffsetForLeaderEpoch"} and "OffsetForLeaderEpoch" in sent


def test_a_run_that_stops_reading_ends_the_drawing():
    with DrawnCases(3, 100_000, None) as cases:
        first = next(iter(cases))
        process = cases._process
    assert first[0]
    assert process.poll() is not None  # killed on leaving, not left drawing 100,000 cases


def test_a_drawing_that_fails_says_why():
    with pytest.raises(RuntimeError, match="drawing cases failed: .*no operation sends"):
        with DrawnCases(1, 5, {18}) as cases:
            list(cases)
