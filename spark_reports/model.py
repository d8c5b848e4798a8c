"""What a roll-up is: plain rows that the Spark job and the DuckDB check both produce, and the
dashboard renders. Nothing here knows about Spark; two roll-ups of the same traces compare equal.

Rows are sorted by their key fields, so that equality is a plain ``==``. Latencies are in
microseconds, percentiles by linear interpolation between the closest ranks (Spark's exact
``percentile``, DuckDB's ``quantile_cont``, NumPy's default), rounded to 0.1 us."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "NO_FAULT",
    "ChaosFelt",
    "ChaosVerdict",
    "CrashRow",
    "DiffRunFacts",
    "DivergenceCluster",
    "GridCell",
    "LatencyRow",
    "LedgerRow",
    "OfferedCell",
    "ReplayRow",
    "Rollup",
    "RuleCell",
    "RuleResult",
    "RuleRun",
    "RunRow",
    "count_basis",
    "latency_tenth",
    "runs_text",
    "utc_iso",
]

NO_FAULT = "none"  # the fault label of exchanges made while no fault was active


def latency_tenth(value: float) -> float:
    """A percentile as a row holds it, to 0.1 us. Interpolated between integers at a rank that is a
    multiple of 0.001, it has at most three decimal places, so rounding to three first removes the
    floating-point noise in which two engines differ, which would otherwise decide a tie at .x5."""
    return round(round(value, 3), 1)


def utc_iso(micros: int) -> str:
    """Microseconds since the epoch as ``2026-01-01T00:00:00Z``."""
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)
    return moment.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class GridCell:
    """One API version on one target: how its exchanges ended."""

    api_key: int
    api_name: str
    api_version: int
    target: str
    total: int
    passed: int
    diverged: int
    errors: int
    timeouts: int
    closed: int
    skipped: int
    # of the diverged exchanges: those in which this target deviates from Kafka by a verdict, and those
    # whose verdict is unknown (so this target is one of two suspects); the rest the other side owns
    deviates: int = 0
    unknown: int = 0

    @property
    def pass_rate(self) -> float:
        judged = self.total - self.skipped
        return self.passed / judged if judged else 0.0

    @property
    def kafka_rate(self) -> float | None:
        """The share of judged exchanges in which this target is neither known nor suspected to deviate
        from Kafka: what its cell is coloured by."""
        judged = self.total - self.skipped
        return (judged - self.deviates - self.unknown) / judged if judged else None


@dataclass(frozen=True, slots=True)
class DivergenceCluster:
    """Every exchange that diverged with one signature, across all runs read."""

    signature: str
    api_key: int
    api_name: str
    api_version: int
    exchanges: int  # trace rows with this signature (one per target of each compared pair)
    cases: int  # distinct case ids among them
    targets: tuple[str, ...]  # sorted
    runs: tuple[str, ...]  # sorted run ids
    example_case: str | None = None  # a case file that replays it, when a run stored one
    repro: str | None = None  # the command that replays it
    pairs: int = 0  # compared pairs (request sent to both targets) that differ in this signature
    # from the run's summary.json (``findings.SignatureFacts``); empty when no run recorded them
    sides: tuple[str, ...] = ()  # the targets in the order of ``values``
    values: tuple[tuple[str, str], ...] = ()  # each side's value, JSON text, first seen first
    verdict: str = "unknown"  # findings.VERDICT_KINDS
    deviates: tuple[str, ...] = ()  # who deviates from Kafka (both sides when unknown)
    verdict_text: str = ""
    evidence: str = ""  # the place in Apache Kafka's source that decides it
    cause: str = ""
    steps: tuple[str, ...] = ()  # the example case's operations, readable
    reproduced: bool = False  # its stored case showed it again when the run that stored it replayed it


@dataclass(frozen=True, slots=True)
class LatencyRow:
    target: str
    api_name: str
    fault: str  # NO_FAULT, or one active fault label (an exchange under two faults counts for both)
    exchanges: int
    p50_us: float
    p99_us: float
    p999_us: float


@dataclass(frozen=True, slots=True)
class RunRow:
    run_id: str
    kind: str  # "diff", "chaos" or "traces" (a directory with traces only, e.g. from dissect)
    targets: tuple[str, ...]
    exchanges: int
    passed: int
    diverged: int
    errors: int  # error, timeout and closed outcomes
    started_at: str  # ISO 8601, UTC, the first exchange
    directory: str


@dataclass(frozen=True, slots=True)
class ChaosVerdict:
    """One scenario's result on one target in one run. The fields after ``error`` came later: a
    ``chaos.json`` that lacks them reads as unknown (None) or empty."""

    scenario: str
    target: str
    verdict: str  # pass, violation, faults-did-not-bite, faults-not-applied, no-progress, error
    promise: str
    operations: int  # completed client operations (ok, fail and info)
    violations: dict[str, int]
    excerpts: dict[str, list]  # anomaly -> the smallest stretch of history that shows it
    run_id: str
    error: str | None = None
    acknowledged: int | None = None  # operations that completed ok; None when the result has no split
    allowed: dict[str, int] = field(default_factory=dict)  # anomaly the settings allow -> measured count
    reasons: dict[str, str] = field(default_factory=dict)  # anomaly -> why it is allowed or forbidden


@dataclass(frozen=True, slots=True)
class RuleCell:
    """One rule family's tests of one API on one target (its newest conformance run): how they ended."""

    family: str
    api_key: int
    api_name: str
    target: str
    tests: int
    passed: int
    failed: int
    errors: int  # could not be set up or broke: neither passed nor failed
    not_applicable: int
    not_run: int  # the run's budget ended before these started
    surprises: int  # outcomes other than those known for that kind of target

    @property
    def ran(self) -> int:
        return self.passed + self.failed

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.ran if self.ran else None


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """One API on one target: does the target route it (advertise it), at which versions, and how much
    of Kafka's behaviour for it holds (``semantics``, from the share of its tests passed)."""

    target: str
    api_key: int
    api_name: str
    routed: bool
    versions: str  # "0-9", or "" when not routed
    rules: int
    tests: int
    passed: int
    failed: int
    errors: int
    not_applicable: int
    not_run: int
    semantics: str  # full, partial, none or untested


@dataclass(frozen=True, slots=True)
class RuleResult:
    """One conformance test that did not pass (failed or could not run), as the run recorded it."""

    rule_id: str
    target: str
    api_name: str
    api_version: int
    outcome: str
    expected_outcome: str
    surprise: bool
    field: str | None
    kafka_value: str | None
    target_value: str | None
    detail: str | None
    kafka_source: str
    run_id: str


@dataclass(frozen=True, slots=True)
class RuleRun:
    """One conformance run of one target."""

    run_id: str
    target: str
    started_at: str
    tests: int
    passed: int
    failed: int
    errors: int
    not_applicable: int
    not_run: int
    surprises: int
    directory: str

    @property
    def pass_rate(self) -> float | None:
        ran = self.passed + self.failed
        return self.passed / ran if ran else None


def runs_text(n: int) -> str:
    return f"{n:,} run" if n == 1 else f"{n:,} runs"


def count_basis(runs: Sequence[ChaosVerdict]) -> str:
    """What the anomaly counts of ``runs`` (one scenario on one target) are counted among: their
    acknowledged operations, or only the runs when a result does not split its operations."""
    several = f" in {runs_text(len(runs))}" if len(runs) > 1 else ""
    if all(v.acknowledged is not None for v in runs):
        return f"of {sum(v.acknowledged or 0 for v in runs):,} acknowledged operations{several}"
    return f"in {runs_text(len(runs))}"


@dataclass(frozen=True, slots=True)
class CrashRow:
    """A target that crashed answering one API version, with its last words."""

    target: str
    api_key: int
    api_name: str
    api_version: int
    message: str
    times: int
    runs: tuple[str, ...]
    example_case: str | None = None
    repro: str | None = None


@dataclass(frozen=True, slots=True)
class OfferedCell:
    """An (API, version) a target advertised in a differential run."""

    target: str
    api_key: int
    api_name: str
    api_version: int


@dataclass(frozen=True, slots=True)
class ChaosFelt:
    """How one chaos scenario's faults were felt on one target: its client operations, split by
    whether a fault was active, by how each ended."""

    scenario: str
    target: str
    faulted: bool
    operations: int
    ok: int
    errors: int
    timeouts: int
    closed: int


@dataclass(frozen=True, slots=True)
class ReplayRow:
    """An earlier report's difference whose stored case a campaign replayed on the current targets."""

    signature: str
    targets: tuple[str, ...]
    shown: bool | None  # still shown; None when the case could not be replayed
    case: str
    run_id: str  # the campaign's differential run that replayed it


@dataclass(frozen=True, slots=True)
class DiffRunFacts:
    """What a later report needs of a differential run to tell a new difference from one the run did
    not draw: its pair and seed, how far it drew (cases 0 .. drawn-1 of the seed's sequence), and the
    first drawn case that showed each signature (-1: the opening case, which every run has)."""

    run_id: str
    targets: tuple[str, ...]
    seed: int | None
    drawn: int
    first_seen: dict[str, int]


@dataclass(slots=True)
class Rollup:
    grid: list[GridCell] = field(default_factory=list)
    divergences: list[DivergenceCluster] = field(default_factory=list)
    latency: list[LatencyRow] = field(default_factory=list)
    runs: list[RunRow] = field(default_factory=list)
    chaos: list[ChaosVerdict] = field(default_factory=list)
    exchanges: int = 0
    rules: list[RuleCell] = field(default_factory=list)
    ledger: list[LedgerRow] = field(default_factory=list)
    rule_results: list[RuleResult] = field(default_factory=list)  # tests that did not pass, newest runs
    rule_runs: list[RuleRun] = field(default_factory=list)
    rule_status: dict[str, dict[str, str]] = field(default_factory=dict)  # target -> rule id -> status
    crashes: list[CrashRow] = field(default_factory=list)
    offered: list[OfferedCell] = field(default_factory=list)  # every pair a diff run's target advertised
    chaos_felt: list[ChaosFelt] = field(default_factory=list)
    replays: list[ReplayRow] = field(default_factory=list)
    diff_runs: list[DiffRunFacts] = field(default_factory=list)

    def targets(self) -> list[str]:
        """Every target the roll-up has a result for: exchanges, chaos verdicts or rule tests."""
        return sorted({c.target for c in self.grid} | {v.target for v in self.chaos} | set(self.rule_status))

    def to_json(self) -> dict[str, Any]:
        return {
            "exchanges": self.exchanges,
            "grid": [
                asdict(c) | {"pass_rate": round(c.pass_rate, 6), "kafka_rate": _rounded(c.kafka_rate)}
                for c in self.grid
            ],
            "divergences": [asdict(d) for d in self.divergences],
            "latency": [asdict(r) for r in self.latency],
            "runs": [asdict(r) for r in self.runs],
            "chaos": [asdict(v) for v in self.chaos],
            "rules": [asdict(c) for c in self.rules],
            "ledger": [asdict(r) for r in self.ledger],
            "rule_results": [asdict(r) for r in self.rule_results],
            "rule_runs": [asdict(r) for r in self.rule_runs],
            "rule_status": {target: dict(rules) for target, rules in self.rule_status.items()},
            "crashes": [asdict(c) for c in self.crashes],
            "offered": [asdict(c) for c in self.offered],
            "chaos_felt": [asdict(c) for c in self.chaos_felt],
            "replays": [asdict(r) for r in self.replays],
            "diff_runs": [asdict(r) for r in self.diff_runs],
        }


def _rounded(rate: float | None) -> float | None:
    return None if rate is None else round(rate, 6)
