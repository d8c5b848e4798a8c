"""The outcomes known for peers: a folder per target kind (``expected/<kind>/<family>.toml``) listing
every rule the peer fails, why, and where Kafka decides it. A run is held against it, so a peer that
changes (a fix or a regression) shows as news: an unexpected failure, or an expected failure that
passed.

    [rule."protocol.unsupported-version.produce"]
    outcome = "fail"                 # or "error", "not-applicable"
    versions = [3, 9]                # optional: only these versions
    sometimes = true                 # optional: the peer fails only some of the time
    reason = "the mock answers with an empty Produce response instead of closing"
    kafka = "SocketServer.Processor.parseRequestHeader"

The reference broker has no file: it is held to passing everything that applies to it."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources

from .runner import Outcome

__all__ = ["Expected", "ExpectedError", "Surprise", "expected_for", "surprises"]


class ExpectedError(ValueError):
    """An expected-outcomes file that cannot be read; the message names the file and the entry."""


@dataclass(frozen=True)
class Expected:
    rule: str
    outcome: str
    reason: str
    kafka: str
    versions: tuple[int, ...] = ()  # empty: every version
    sometimes: bool = False  # the peer does it only some of the time: a pass is no news either

    def covers(self, outcome: Outcome) -> bool:
        return outcome.rule == self.rule and (not self.versions or outcome.version in self.versions)


@dataclass(frozen=True)
class Surprise:
    outcome: Outcome
    expected: str  # what the file says ("pass" when it says nothing)

    def describe(self) -> str:
        o = self.outcome
        what = f"{o.rule} v{o.version} on {o.target}: {o.outcome}, expected {self.expected}"
        if o.field:
            what += f" ({o.field}: expected {o.expected}, got {o.got})"
        elif o.detail:
            what += f" ({o.detail})"
        return what


def expected_for(kind: str, catalogue_ids: set[str] | None = None) -> dict[str, Expected]:
    """The entries for a target kind (``rdkafka-mock``, ``tansu``); none for the reference broker."""
    folder = resources.files(__package__) / "expected" / kind
    if not folder.is_dir():
        return {}
    out: dict[str, Expected] = {}
    for file in sorted(folder.iterdir(), key=lambda f: f.name):
        if file.name.endswith(".toml"):
            for entry in _read(f"expected/{kind}/{file.name}", file.read_text(), catalogue_ids):
                if entry.rule in out:
                    raise ExpectedError(f"expected/{kind}: rule {entry.rule!r} is listed twice")
                out[entry.rule] = entry
    return out


def _read(name: str, text: str, catalogue_ids: set[str] | None) -> list[Expected]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ExpectedError(f"{name}: {exc}") from None
    out = []
    for rule_id, entry in data.get("rule", {}).items():
        where = f"{name}: rule {rule_id!r}"
        if catalogue_ids is not None and rule_id not in catalogue_ids:
            raise ExpectedError(f"{where} is not in the catalogue")
        outcome = entry.get("outcome", "fail")
        if outcome not in ("fail", "error", "not-applicable"):
            raise ExpectedError(f"{where}: outcome {outcome!r} (fail, error or not-applicable)")
        if not entry.get("reason") or not entry.get("kafka"):
            raise ExpectedError(f"{where}: needs a reason and a kafka source pointer")
        versions = tuple(int(v) for v in entry.get("versions", ()))
        sometimes = bool(entry.get("sometimes", False))
        out.append(Expected(rule_id, outcome, entry["reason"], entry["kafka"], versions, sometimes))
    return out


def surprises(outcomes: list[Outcome], expected: dict[str, Expected]) -> list[Surprise]:
    """Outcomes that differ from what is expected: a failure or error not listed, and a listed one that
    did not happen (a pass where a failure was expected). Not-applicable outcomes are news only when
    listed otherwise."""
    found = []
    for outcome in outcomes:
        if outcome.outcome == "not-run":  # a budget that ran out says nothing of the target
            continue
        entry = expected.get(outcome.rule)
        if entry is not None and entry.covers(outcome):
            if outcome.outcome != entry.outcome and not (entry.sometimes and outcome.outcome == "pass"):
                found.append(Surprise(outcome, entry.outcome))
        elif outcome.outcome in ("fail", "error"):
            found.append(Surprise(outcome, "pass"))
    return found
