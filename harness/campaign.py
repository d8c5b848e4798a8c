"""The end-to-end campaign, kconform's main job: the conformance catalogue on every target (within its
share of the budget), a time-bounded differential campaign between every pair of the chosen targets,
the chaos catalogue on every target that can run it (the replication catalogue on a replicated cluster,
``reference:N``; the default one on a single broker and the mock), then the dashboard.

``plan_campaign`` is a pure decision (targets, time budget, catalogue in; what runs for how long out), so
the budget arithmetic is tested without starting anything; ``run_end_to_end`` carries a plan out.

An out directory holds one run directory per part (``conform-T/``, ``diff-A-vs-B/``, ``chaos-T/``) and
the dashboard
(``report/index.html``, ``summary.json``, ``junit.xml``)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .chaos.scenarios import Scenario

__all__ = [
    "CHAOS_CATALOGUES",
    "DEFAULT_TARGETS",
    "CampaignError",
    "CampaignPlan",
    "PartOutcome",
    "chaos_kind",
    "default_targets",
    "plan_campaign",
    "previous_report",
    "run_end_to_end",
]

DEFAULT_TARGETS = ("reference", "rdkafka-mock")
# chaos kind (``scenario_set.parse_target``) -> the catalogue it runs, as ``kconform chaos`` chooses it
CHAOS_CATALOGUES = {"reference": "default", "rdkafka-mock": "default", "cluster": "replication"}
REPORT_RESERVE_S = 75.0  # Spark's start and the roll-up of a campaign's traces, on two cores
SCENARIO_OVERHEAD_S = 2.0  # a fresh proxied cluster per scenario: broker start, proxies, topic
MIN_SCENARIO_S = 8.0  # shorter runs leave some faults (link flaps) too little time to reach the client
MAX_SCENARIO_S = 20.0
DIFF_SHARE = 0.3  # of the time left after the report's reserve and conformance, when chaos runs too
MIN_DIFF_S = 20.0
CONFORM_SHARE = 0.25  # of the time left after the report's reserve, shared by the targets
CONFORM_OVERHEAD_S = 5.0  # starting a target for its conformance run
MIN_CONFORM_S = 10.0  # about a hundred tests on two cores: a sample of every family, little less
MAX_CONFORM_S = 300.0  # the whole catalogue at each rule's lowest and highest version fits in this


class CampaignError(ValueError):
    """A campaign that cannot be planned as asked (an unknown target, a budget too small)."""


@dataclass(frozen=True, slots=True)
class CampaignPlan:
    diff_pairs: tuple[tuple[str, str], ...]
    diff_seconds: float  # per pair
    chaos: tuple[tuple[str, tuple[str, ...]], ...]  # (target, scenario names)
    scenario_seconds: float
    notes: tuple[str, ...] = ()  # what was left out, and why
    conform: tuple[str, ...] = ()  # targets that run the conformance catalogue
    conform_seconds: float = 0.0  # per target; tests not started within it are recorded as not run

    @property
    def scenario_runs(self) -> int:
        return sum(len(names) for _, names in self.chaos)

    def estimated_seconds(self) -> float:
        chaos = self.scenario_runs * (self.scenario_seconds + SCENARIO_OVERHEAD_S)
        conform = len(self.conform) * (self.conform_seconds + CONFORM_OVERHEAD_S)
        return len(self.diff_pairs) * self.diff_seconds + chaos + conform + REPORT_RESERVE_S


def chaos_kind(target: str) -> str:
    """What a target is to chaos: ``reference``, ``rdkafka-mock`` or ``cluster`` (``reference:N`` or
    ``docker:VERSION:N``, N >= 2); a ValueError says why a target cannot run chaos (a single docker
    broker, a bootstrap address, an option chaos does not take)."""
    from .chaos.scenario_set import parse_target  # the chaos command's own reading of a target

    return parse_target(target)[0]


def default_targets(tansu_installed: bool) -> tuple[str, ...]:
    """The targets of a campaign that names none: the reference broker first (compared with each of the
    others), librdkafka's mock cluster, and Tansu where its binary is installed. Tansu runs no chaos (it
    has no catalogue), so it takes a share of the differential budget only."""
    return DEFAULT_TARGETS + (("tansu",) if tansu_installed else ())


def plan_campaign(
    targets: Sequence[str],
    budget_s: float,
    catalogue: Mapping[str, Scenario],
    *,
    cluster_catalogue: Mapping[str, Scenario] | None = None,
    diff: bool = True,
    chaos: bool = True,
    scenarios: Sequence[str] = (),
    conform: bool = True,
) -> CampaignPlan:
    """Share ``budget_s`` between the parts. Every target runs the conformance catalogue in an equal
    part of ``CONFORM_SHARE`` (at most ``MAX_CONFORM_S``; none, with a note, when that part would be
    under ``MIN_CONFORM_S``). Every pair of targets is compared (the first target against each of the
    others); chaos runs ``catalogue`` on a single broker and the mock, and ``cluster_catalogue`` (the
    replication catalogue) on a replicated cluster. When the budget cannot give every scenario
    ``MIN_SCENARIO_S``, scenarios are taken in catalogue order, alternating targets, until it is spent,
    and the rest are named in ``notes``."""
    if not targets:
        raise CampaignError("give at least one target (e.g. --targets reference,rdkafka-mock)")
    if len(set(targets)) != len(targets):
        raise CampaignError(f"a target is named twice in {', '.join(targets)}")
    notes: list[str] = []
    pairs = tuple((targets[0], other) for other in targets[1:]) if diff else ()
    if diff and not pairs:
        notes.append("one target only: no differential campaign (it needs two)")
    catalogues = {"default": catalogue, "replication": cluster_catalogue}
    wanted = _wanted_scenarios(targets, catalogues, scenarios, notes) if chaos else []

    usable = budget_s - REPORT_RESERVE_S
    conform_targets, conform_seconds = _conform_share(targets, usable, notes) if conform else ((), 0.0)
    usable -= len(conform_targets) * (conform_seconds + CONFORM_OVERHEAD_S)
    runs = sum(len(names) for _, names in wanted)
    diff_total = (usable * DIFF_SHARE if runs else usable) if pairs else 0.0
    if pairs and diff_total < MIN_DIFF_S * len(pairs):
        raise CampaignError(
            f"a budget of {budget_s:.0f}s leaves too little for the differential campaign; give at least "
            f"{budget_s - usable + MIN_DIFF_S * len(pairs) / (DIFF_SHARE if runs else 1):.0f}s"
        )
    chaos_total = usable - diff_total
    per_run = chaos_total / runs - SCENARIO_OVERHEAD_S if runs else 0.0
    chosen = wanted
    if runs and per_run < MIN_SCENARIO_S:
        fits = int(chaos_total // (MIN_SCENARIO_S + SCENARIO_OVERHEAD_S))
        if fits == 0:
            raise CampaignError(
                f"a budget of {budget_s:.0f}s leaves no time for chaos scenarios; give more time, "
                "or --no-chaos"
            )
        chosen = _take_alternating(wanted, fits)
        left_out = [f"{t}/{n}" for t, names in wanted for n in names if n not in dict(chosen).get(t, ())]
        notes.append(f"the budget fits {fits} of {runs} scenario runs; left out: {', '.join(left_out)}")
        per_run = MIN_SCENARIO_S
        runs = fits
    return CampaignPlan(
        diff_pairs=pairs,
        diff_seconds=diff_total / len(pairs) if pairs else 0.0,
        chaos=tuple((t, tuple(names)) for t, names in chosen),
        scenario_seconds=min(MAX_SCENARIO_S, per_run) if runs else 0.0,
        notes=tuple(notes),
        conform=conform_targets,
        conform_seconds=conform_seconds,
    )


def _conform_share(targets: Sequence[str], usable: float, notes: list[str]) -> tuple[tuple[str, ...], float]:
    each = min(MAX_CONFORM_S, usable * CONFORM_SHARE / len(targets) - CONFORM_OVERHEAD_S)
    if each < MIN_CONFORM_S:
        notes.append(
            f"no conformance run: its share of the budget gives each target {max(each, 0):.0f}s, under "
            f"{MIN_CONFORM_S:.0f}s"
        )
        return (), 0.0
    return tuple(targets), each


def _wanted_scenarios(
    targets: Sequence[str],
    catalogues: Mapping[str, Mapping[str, Scenario] | None],
    scenarios: Sequence[str],
    notes: list[str],
) -> list[tuple[str, list[str]]]:
    """Each chaos target with the scenarios of its kind's catalogue that run on it (only ``scenarios``,
    when given); targets that cannot run chaos, or run none of the chosen scenarios, go into ``notes``."""
    known = {name for names in catalogues.values() if names for name in names}
    unknown = [n for n in scenarios if n not in known]
    if unknown:
        raise CampaignError(f"unknown scenario(s) {', '.join(unknown)}; see kconform chaos --list")
    wanted: list[tuple[str, list[str]]] = []
    for target in targets:
        try:
            kind = chaos_kind(target)
        except ValueError as exc:
            notes.append(f"{target}: no chaos ({exc})")
            continue
        name = CHAOS_CATALOGUES.get(kind)
        if name is None:  # a kind chaos learnt to run before the campaign was told its catalogue
            notes.append(f"{target}: no chaos (the campaign has no catalogue for {kind} targets)")
            continue
        catalogue = catalogues.get(name)
        if catalogue is None:
            notes.append(
                f"{target}: no chaos (a {kind} target runs the {name} catalogue, and none was given)"
            )
            continue
        names = [n for n in (scenarios or catalogue) if n in catalogue and catalogue[n].allowed_on(kind)]
        if names:
            wanted.append((target, names))
        elif scenarios:
            notes.append(f"{target}: none of the chosen scenarios is in the {name} catalogue for {kind}")
    return wanted


def _take_alternating(wanted: list[tuple[str, list[str]]], count: int) -> list[tuple[str, list[str]]]:
    taken: dict[str, list[str]] = {t: [] for t, _ in wanted}
    depth = 0
    while count > 0 and any(depth < len(names) for _, names in wanted):
        for target, names in wanted:
            if depth < len(names) and count > 0:
                taken[target].append(names[depth])
                count -= 1
        depth += 1
    return [(t, names) for t, names in taken.items() if names]


def part_directory(kind: str, *targets: str) -> str:
    """``diff-reference-vs-rdkafka-mock``, ``chaos-rdkafka-mock-3``: safe as a folder name."""
    safe = [re.sub(r"[^A-Za-z0-9._-]+", "-", t).strip("-") for t in targets]
    return f"{kind}-{'-vs-'.join(safe)}"


def previous_report(out: Path) -> Path | None:
    """The newest earlier campaign's report beside ``out`` (same parent folder), for the dashboard's
    difference from the previous run."""
    parent = out.resolve().parent
    if not parent.is_dir():
        return None
    earlier = [
        p / "report"
        for p in parent.iterdir()
        if p.is_dir() and p.resolve() != out.resolve() and (p / "report" / "summary.json").is_file()
    ]
    return max(earlier, key=lambda p: (p / "summary.json").stat().st_mtime, default=None)


@dataclass(slots=True)
class PartOutcome:
    part: str  # "conform", "diff" or "chaos"
    targets: tuple[str, ...]
    directory: Path
    headline: str = ""
    failed: bool = False  # a divergence or a broken promise (findings, not errors)
    error: str | None = None  # the part could not run


@dataclass(slots=True)
class CampaignOutcome:
    parts: list[PartOutcome] = field(default_factory=list)
    dashboard: Path | None = None
    report_error: str | None = None
    seconds: float = 0.0


class CampaignProgress:
    """What ``run_end_to_end`` reports as it goes; the command line draws it, tests may ignore it."""

    def part_started(self, part: str, label: str, total: float) -> None: ...
    def part_advanced(self, label: str, completed: float, status: str) -> None: ...
    def part_finished(self, outcome: PartOutcome) -> None: ...
    def report_step(self, step: str) -> None: ...


def run_end_to_end(
    plan: CampaignPlan,
    out: Path,
    *,
    examples: int = 100_000,
    seed: int = 0,
    toxiproxy_url: str | None = None,
    previous: Path | None = None,
    master: str | None = None,
    engine: str = "spark",
    progress: CampaignProgress | None = None,
    clock: Callable[[], float] = time.monotonic,
    security: tuple[dict[str, str], dict[str, str]] = ({}, {}),
) -> CampaignOutcome:
    """``security``: the clients' properties (--target-config) and the broker properties that secure
    the targets the campaign starts (--broker-config), for every part."""
    progress = progress or CampaignProgress()
    out.mkdir(parents=True, exist_ok=True)
    started = clock()
    outcome = CampaignOutcome()
    for target in plan.conform:
        outcome.parts.append(_conform_part(target, out, plan.conform_seconds, progress, security))
    for a, b in plan.diff_pairs:
        outcome.parts.append(
            _diff_part(
                a,
                b,
                out,
                plan.diff_seconds,
                examples,
                seed,
                progress,
                clock,
                previous=previous,
                security=security,
            )
        )
    for target, names in plan.chaos:
        outcome.parts.append(
            _chaos_part(target, names, out, plan.scenario_seconds, seed, toxiproxy_url, progress, security)
        )
    from kconform.spark_reports.build import build_dashboard
    from kconform.spark_reports.runs import ReportInputError

    ran = [
        p.directory
        for p in outcome.parts
        if p.error is None and ((p.directory / "traces").is_dir() or (p.directory / "rules").is_dir())
    ]
    if ran:
        try:
            outcome.dashboard = build_dashboard(
                ran, out / "report", previous=previous, master=master, engine=engine,
                progress=progress.report_step,
            )  # fmt: skip
        except ReportInputError as exc:
            outcome.report_error = str(exc)
    else:
        outcome.report_error = "no part of the campaign ran, so there is nothing to report"
    outcome.seconds = clock() - started
    return outcome


def _conform_part(spec, out, seconds, progress, security=({}, {})) -> PartOutcome:
    from .conform.run import run_conformance
    from .targets.base import TargetError
    from .targets.registry import make_target

    label = f"conform {spec}"
    part = PartOutcome("conform", (spec,), out / part_directory("conform", spec))
    progress.part_started("conform", label, seconds)
    began = time.monotonic()
    tally: dict[str, int] = {}

    def advance(outcome) -> None:
        tally[outcome.outcome] = tally.get(outcome.outcome, 0) + 1
        status = ", ".join(f"{n} {o}" for o, n in sorted(tally.items()))
        progress.part_advanced(label, min(seconds, time.monotonic() - began), status)

    try:
        with make_target(spec, *security) as target:
            result = run_conformance(
                target, out=part.directory, pick="ends", seconds=seconds, on_outcome=advance
            )
    except TargetError as exc:
        part.error = f"{label}: {exc}"
    else:
        book = result.ledger
        part.headline = (
            f"{book['passed']} passed of {book['passed'] + book['failed']} ran, {book['errors']} errors, "
            f"{book['not_applicable']} not applicable, {book['not_run']} not run, "
            f"{len(result.surprises)} not as known"
        )
        part.failed = bool(result.surprises)
    progress.part_finished(part)
    return part


# The share of a differential part's time kept for replaying the previous report's cases that its
# drawing did not meet again, so that the report can tell a fixed difference from one not drawn.
REPLAY_SHARE = 0.15


def _diff_part(
    a_spec, b_spec, out, seconds, examples, seed, progress, clock, *, previous=None, security=({}, {})
) -> PartOutcome:
    from .diff.cases import run_campaign
    from .diff.replays import cases_to_replay, write_replays
    from .targets.base import TargetError
    from .targets.registry import make_target

    label = f"diff {a_spec} vs {b_spec}"
    part = PartOutcome("diff", (a_spec, b_spec), out / part_directory("diff", a_spec, b_spec))
    progress.part_started("diff", label, seconds)
    began = clock()
    try:
        with ExitStack() as stack:
            a = stack.enter_context(make_target(a_spec, *security))
            b = stack.enter_context(make_target(b_spec, *security))

            def advance(done: int, _total: int, found: int) -> None:
                progress.part_advanced(label, clock() - began, f"{done} cases, {found} causes of difference")

            replay_s = seconds * REPLAY_SHARE if previous is not None else 0.0
            result = run_campaign(
                a,
                b,
                part.directory,
                examples=examples,
                seed=seed,
                seconds=seconds - replay_s,
                progress=advance,
            )
            if previous is not None:
                pair = (a.name, b.name)
                cases = cases_to_replay(previous, pair, result.found)
                progress.part_advanced(label, clock() - began, f"replaying {len(cases)} earlier cases")
                write_replays(part.directory, previous, _replays(a, b, cases, pair, began + seconds, clock))
    except TargetError as exc:
        part.error = f"{label}: {exc}"
    else:
        part.headline = (
            f"{result.cases} cases, {result.operations} operations, {result.pairs_compared} pairs compared, "
            f"{len(result.causes)} causes of difference"
        )
        part.failed = bool(result.causes)
    progress.part_finished(part)
    return part


def _replays(a, b, cases, pair, deadline, clock) -> list:
    """Replay the previous report's cases on the targets, brought back first if the run's last case
    killed one. A target that cannot be brought back leaves the rest not replayed, never a failed part."""
    from .diff.engine import DiffEngine
    from .diff.replays import replay_cases
    from .targets.base import TargetError

    def engine() -> DiffEngine:
        for target in (a, b):
            if not target.alive():
                target.restart()
        return DiffEngine(a, b)

    try:
        return replay_cases(engine, cases, pair, deadline=deadline, clock=clock)
    except TargetError:
        return []


def _chaos_part(target, names, out, seconds, seed, toxiproxy_url, progress, security=({}, {})) -> PartOutcome:
    from .chaos.scenario_set import run_chaos
    from .chaos.scenarios import load_catalogue

    catalogue = load_catalogue(name=CHAOS_CATALOGUES[chaos_kind(target)])  # as the plan chose
    label = f"chaos {target}"
    part = PartOutcome("chaos", (target,), out / part_directory("chaos", target))
    progress.part_started("chaos", label, len(names))
    done: list[str] = []

    def finished(result) -> None:
        done.append(f"{result.scenario}: {result.verdict}")
        progress.part_advanced(label, len(done), done[-1])

    try:
        results = run_chaos(
            target,
            [catalogue[n] for n in names],
            duration=seconds,
            out=part.directory,
            seed=seed,
            toxiproxy_url=toxiproxy_url,
            client_properties=security[0],
            broker_properties=security[1],
            on_result=finished,
        )
    except (OSError, RuntimeError, ValueError) as exc:  # a Toxiproxy that cannot be reached, a bad target
        part.error = f"{label}: {exc}"
    else:
        verdicts: dict[str, int] = {}
        for r in results:
            verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
        part.headline = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
        # a scenario skipped (one the target cannot run as written) proves nothing either way
        part.failed = any(r.verdict not in ("pass", "skipped") for r in results)
    progress.part_finished(part)
    return part
