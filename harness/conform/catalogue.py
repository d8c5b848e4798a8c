"""The conformance catalogue: Kafka's rules, each a small check with the facts a report needs.

A rule says one thing Apache Kafka does (``text``), for one API (``api``) over a range of its versions
(``versions``), in the releases from ``since`` on, and where in Kafka's source the decision is made
(``source``: class.method). Its ``check`` talks to a target over the network only, through a
:class:`~.session.RuleSession`, at one version, and fails with :class:`RuleFailed` naming the field
and the two values. A rule that needs more than the Kafka protocol gives (a broker setting, a restart)
says so in ``needs``; a target that cannot give it reports the rule as not applicable, never passed.

Rules register themselves with :func:`rule` in the ``rules_*`` modules; :func:`catalogue` imports them
all and checks every rule's facts once."""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from kconform.codecs import api_schema
from kconform.codecs.releases import kafka_release

__all__ = ["CatalogueError", "Rule", "RuleFailed", "catalogue", "rule"]

Check = Callable[..., Awaitable[None]]  # (a session.RuleSession, the version under test)

_ID = re.compile(r"^[a-z0-9]+(?:[.-][a-z0-9]+)*$")
_SOURCE = re.compile(r"^[A-Z][A-Za-z0-9]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")  # Class.method, then any words
NEEDS = frozenset({"broker-config", "restart"})


class CatalogueError(ValueError):
    """A rule whose facts do not hold together; the message names the rule and the fact."""


class RuleFailed(AssertionError):
    """The target did not do what the rule says: ``field`` with the value Kafka gives and the one seen."""

    def __init__(self, field_path: str, expected, got, note: str = "") -> None:
        self.field = field_path
        self.expected = expected
        self.got = got
        self.note = note
        super().__init__(f"{field_path}: expected {expected!r}, got {got!r}" + (f" ({note})" if note else ""))


@dataclass(frozen=True)
class Rule:
    id: str
    api: int
    versions: tuple[int, int]  # the API versions the rule speaks of, inclusive
    source: str  # where Apache Kafka decides it: Class.method, optionally with a word on the branch
    text: str  # the rule, one sentence
    check: Check = field(compare=False, repr=False)
    family: str = ""
    since: str = "2.8"  # the first Apache Kafka release where it holds
    needs: frozenset[str] = frozenset()
    broker: dict[str, str] = field(default_factory=dict, compare=False)  # settings the rule needs
    once: bool = False  # the version does not change what is checked: run at the newest one only

    @property
    def api_name(self) -> str:
        return api_schema(self.api).name

    def versions_on(self, served: tuple[int, int] | None) -> list[int]:
        """The versions this rule runs at on a target serving ``served`` (its advertised range)."""
        if served is None:
            return []
        low, high = max(self.versions[0], served[0]), min(self.versions[1], served[1])
        return list(range(low, high + 1))


_RULES: dict[str, Rule] = {}


def rule(
    id: str,  # noqa: A002 - the rule id is what the catalogue calls it
    *,
    api: int,
    versions: tuple[int, int],
    source: str,
    family: str,
    since: str = "2.8",
    needs: tuple[str, ...] = (),
    broker: dict[str, str] | None = None,
    once: bool = False,
) -> Callable[[Check], Check]:
    """Register the decorated check as a rule; its docstring is the rule's text."""

    def register(check: Check) -> Check:
        add(
            Rule(
                id=id,
                api=api,
                versions=versions,
                source=source,
                text=" ".join((check.__doc__ or "").split()),
                check=check,
                family=family,
                since=since,
                needs=frozenset(needs) | ({"broker-config"} if broker else frozenset()),
                broker=dict(broker or {}),
                once=once,
            )
        )
        return check

    return register


def add(one: Rule) -> None:
    """Register a rule built as data (a table of rules shares one check)."""
    if one.id in _RULES:
        raise CatalogueError(f"rule {one.id}: registered twice")
    _RULES[one.id] = one


def validate(one: Rule) -> None:
    """Every fact a report shows must be there and make sense."""
    problems = []
    if not _ID.match(one.id):
        problems.append("the id is lower-case words joined by - and .")
    try:
        schema = api_schema(one.api)
    except KeyError:
        schema = None
        problems.append(f"API key {one.api} is not one Kafka defines")
    low, high = one.versions
    if not 0 <= low <= high:
        problems.append(f"versions {one.versions} are not a range")
    elif schema is not None and not (low in schema.versions and high in schema.versions):
        problems.append(f"versions {one.versions} outside {schema.name}'s {schema.valid_versions}")
    if not _SOURCE.match(one.source):
        problems.append(f"source {one.source!r} does not name Class.method in Kafka's source")
    if len(one.text) < 20:
        problems.append("the rule's text (the check's docstring) says what Kafka does, in a sentence")
    if not one.family:
        problems.append("no family")
    try:
        kafka_release(one.since)
    except Exception:  # noqa: BLE001 - the release table's own error names what is wrong
        problems.append(f"since {one.since!r} is not a Kafka release")
    if one.needs - NEEDS:
        problems.append(f"needs {sorted(one.needs - NEEDS)} beyond {sorted(NEEDS)}")
    if problems:
        raise CatalogueError(f"rule {one.id}: " + "; ".join(problems))


def catalogue() -> dict[str, Rule]:
    """Every rule, by id, each checked."""
    from . import __name__ as package

    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if module.name.startswith("rules_"):
            importlib.import_module(f"{package}.{module.name}")
    for one in _RULES.values():
        validate(one)
    return dict(sorted(_RULES.items()))
