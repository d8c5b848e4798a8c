"""``kconform diff-acls``: apply the same ACL set-up on two targets, run the probe catalogue as each
principal, and report every (principal, probe) whose outcomes differ, with who deviates from Kafka.
Exit 0: no difference; 1: differences; 2: bad usage, a bad set-up, or a target that cannot be used."""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import click

from .target_config import target_config_option

__all__ = ["diff_acls"]


class AclTargetProblem(click.ClickException):
    """A target that cannot be started, reached or given the set-up: one ``Error:`` line, exit 2."""

    exit_code = 2


def _prepare(spec: str, properties: dict[str, str], setup):
    """The target for ``spec``, secured for the run: a reference broker secures itself (its admin's
    password made here); any other target is reached with the --target-config's SASL admin."""
    from ..diff.acl_reference import PROTOCOL, admin_properties, secured_properties
    from ..targets.base import TargetError
    from ..targets.reference import ReferenceTarget
    from ..targets.registry import make_target

    try:
        target = make_target(spec, None if spec.startswith("reference") else properties)
        if isinstance(target, ReferenceTarget):
            password = secrets.token_hex(12)
            target.secure_brokers(PROTOCOL, secured_properties(setup, password))
            target.secure(admin_properties(password))
        elif spec.startswith("reference"):
            raise TargetError(f"target {spec!r}: diff-acls starts a single reference node only")
    except TargetError as exc:
        raise AclTargetProblem(str(exc)) from None
    sasl = target.security.sasl if target.security is not None else None
    if sasl is None or sasl.username is None:
        raise AclTargetProblem(
            f"target {spec!r}: diff-acls logs in as each principal, so it needs a SASL admin: give "
            "--target-config with security.protocol=SASL_PLAINTEXT or SASL_SSL, sasl.mechanism (PLAIN or "
            "SCRAM-SHA-256/512) and the admin's sasl.jaas.config"
        )
    if sasl.username in {p.user for p in setup.principals}:
        raise AclTargetProblem(f"the set-up's principal {sasl.username} is the admin of {spec}: rename it")
    return target


def _start(stack: ExitStack, target):
    from ..targets.base import TargetError

    try:
        stack.enter_context(target)
        return target.api_versions()
    except TargetError as exc:
        raise AclTargetProblem(str(exc)) from None


async def _run_both(a, b, versions, setup, run_id: str):
    """Both sides at once; each takes its own set-up away whatever the other did."""
    from ..client.errors import ClientError
    from ..diff.acl_admin import SetupFailed
    from ..diff.acl_runner import run_side

    sides = []
    for side, target in zip("ab", (a, b), strict=True):
        prefix = f"kc-acl-{run_id}-{side}-"
        sides.append(run_side(target.name, target.bootstrap, target.security, setup, prefix, versions[side]))
    results = await asyncio.gather(*sides, return_exceptions=True)
    for target, result in zip((a, b), results, strict=True):
        if isinstance(result, SetupFailed | ClientError):
            raise AclTargetProblem(f"target {target.name}: the set-up could not be applied: {result}")
        if isinstance(result, BaseException):
            raise result
    return results


@click.command("diff-acls")
@click.option("--a", "a_spec", required=True, help="first target (reference starts a secured broker)")
@click.option("--b", "b_spec", required=True, help="second target")
@click.option(
    "--setup", "setup_path", default=None, metavar="FILE", help="ACL set-up (TOML); default: built in"
)
@target_config_option
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="run directory for acl-diff.json (default: ./kconform-runs/diff-acls-<time>)",
)
def diff_acls(a_spec, b_spec, setup_path, target_config, out) -> None:
    """Apply one ACL set-up on two targets and compare what each principal may do: every probe whose
    outcomes differ, and which side deviates from Kafka's authorizer rules. Exit 0: no difference; 1:
    differences; 2: bad usage, a bad set-up or a target that cannot be used."""
    from ..diff.acl_compare import compare_sides
    from ..diff.acl_setup import SetupError, load_setup

    try:
        setup = load_setup(setup_path)
    except SetupError as exc:
        raise AclTargetProblem(str(exc)) from None
    out = out or Path("kconform-runs") / time.strftime("diff-acls-%Y%m%d-%H%M%S")
    run_id = secrets.token_hex(4)
    with ExitStack() as stack:
        a = _prepare(a_spec, target_config, setup)
        b = _prepare(b_spec, target_config, setup)
        versions = {"a": _start(stack, a), "b": _start(stack, b)}
        side_a, side_b = asyncio.run(_run_both(a, b, versions, setup, run_id))
    names = (a.name, b.name) if a.name != b.name else (f"{a.name} (a)", f"{b.name} (b)")
    differences = compare_sides(side_a.outcomes, side_b.outcomes, side_a.expectations, side_b.expectations)
    report = _report(names, setup, side_a, side_b, differences)
    out.mkdir(parents=True, exist_ok=True)
    (out / "acl-diff.json").write_text(json.dumps(report, indent=2) + "\n")
    _print(names, report, differences, out)
    sys.exit(1 if differences else 0)


def _report(names, setup, side_a, side_b, differences) -> dict:
    from ..diff.acl_compare import kafka_mismatches

    keys = list(side_a.outcomes)
    return {
        "targets": list(names),
        "setup": setup.source,
        "prefixes": [side_a.prefix, side_b.prefix],
        "principals": [p.user for p in setup.principals],
        "probes_compared": sum(1 for k in keys if k in side_b.outcomes),
        "differences": [d.to_json(names) for d in differences],
        "outcomes": [
            {
                "principal": user,
                "probe": probe,
                "a": side_a.outcomes[(user, probe)],
                "b": side_b.outcomes.get((user, probe)),
                "kafka": side_a.expectations[(user, probe)].kafka,
            }
            for user, probe in keys
        ],
        "against_kafka": {  # outcomes Kafka's rules reject, differing or not
            side: [
                {
                    "principal": u,
                    "probe": p,
                    "outcome": run.outcomes[(u, p)],
                    "kafka": run.expectations[(u, p)].kafka,
                }
                for u, p in kafka_mismatches(run.outcomes, run.expectations)
            ]
            for side, run in (("a", side_a), ("b", side_b))
        },
        "skipped": {"a": side_a.skipped, "b": side_b.skipped},
        "notes": {"a": side_a.notes, "b": side_b.notes},
    }


def _print(names, report, differences, out: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"{names[0]} vs {names[1]}: {len(report['principals'])} principals, "
        f"{report['probes_compared']} probes compared, {len(differences)} differences",
        caption=f"details in {out / 'acl-diff.json'}",
    )
    for column in ("principal", "probe", names[0], names[1], "verdict"):
        table.add_column(column, overflow="fold")
    for d in differences:
        table.add_row(d.principal, d.probe, d.a, d.b, d.verdict(names))
    Console(width=max(Console().width, 160)).print(table)
    for side, name in zip("ab", names, strict=True):
        wrong = report["against_kafka"][side]
        if wrong:
            Console(stderr=True).print(f"{name}: {len(wrong)} outcomes differ from Kafka's authorizer rules")
        for line in report["skipped"][side]:
            Console(stderr=True).print(f"{name}: skipped {line}")
        for line in report["notes"][side]:
            Console(stderr=True).print(f"{name}: {line}")
