"""``kconform codecs ...``: look at and check the codecs."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from kconform.codecs import DecodeError, api_schemas
from kconform.codecs.framing import decode_request, decode_response


@click.group()
def codecs() -> None:
    """The wire-protocol codecs: self-check, API table, decoding frames."""


def _round_trip_failures(cls, version: int, rng: random.Random, examples: int) -> tuple[int, list[str], int]:
    """(examples checked, failure messages, largest encoding) for one (message, version)."""
    from kconform.codecs.engines import interpret_decode as decode_message
    from kconform.codecs.engines import interpret_encode as encode_message
    from kconform.codecs.strategies import sample

    failures = []
    largest = 0
    for _ in range(examples):
        value = sample(cls, version, rng)
        try:
            encoded = value.encode(version)
            largest = max(largest, len(encoded))
            if cls.decode(encoded, version) != value:
                failures.append("decoded value differs from the encoded one")
            elif encode_message(value, version) != encoded:
                failures.append("generated and interpreted encoders disagree")
            elif decode_message(cls, encoded, version)[0] != value:
                failures.append("generated and interpreted decoders disagree")
        except Exception as exc:  # a self-check reports everything it finds, then exits non-zero
            failures.append(f"{type(exc).__name__}: {exc}")
    return examples, failures, largest


@codecs.command()
@click.option("--examples", default=5, show_default=True, help="random values per (message, version)")
@click.option("--seed", default=0, show_default=True, help="seed for the random values")
@click.option("--json", "as_json", is_flag=True, help="print one JSON summary instead of the table")
def selfcheck(examples: int, seed: int, as_json: bool) -> None:
    """Round-trip every message at every version and print the coverage table."""
    from rich.progress import Progress

    from kconform.codecs.strategies import all_message_versions

    rng = random.Random(seed)
    pairs = all_message_versions()
    rows: dict[str, dict] = {}
    failed: list[str] = []
    console = Console(stderr=as_json)
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("round-tripping", total=len(pairs))
        for cls, version in pairs:
            checked, failures, largest = _round_trip_failures(cls, version, rng, examples)
            row = rows.setdefault(cls.__name__, {"versions": [], "checked": 0, "failures": 0, "largest": 0})
            row["versions"].append(version)
            row["checked"] += checked
            row["failures"] += len(failures)
            row["largest"] = max(row["largest"], largest)
            failed.extend(f"{cls.__name__} v{version}: {msg}" for msg in failures[:1])
            progress.advance(task)
    apis = api_schemas()
    api_pairs = sum(len(s.versions) * 2 for s in apis)
    summary = {
        "api_keys": len(apis),
        "request_response_pairs": api_pairs,
        "all_pairs": len(pairs),
        "examples": sum(r["checked"] for r in rows.values()),
        "failures": len(failed),
        "failed": failed,
    }
    if as_json:
        click.echo(json.dumps(summary))
    else:
        table = Table(title="Codec coverage: every API key, every version, round-tripped")
        for column in ("key", "API", "versions", "flexible", "request", "response"):
            table.add_column(column)
        for schema in apis:
            lo, hi = schema.valid_versions
            flex = schema.flexible_versions[0]
            cells = []
            for name in (schema.request_name, schema.response_name):
                row = rows[name]
                cells.append("ok" if not row["failures"] else f"[red]{row['failures']} failed[/red]")
            table.add_row(
                str(schema.api_key), schema.name, f"{lo}-{hi}", f"{flex}+" if flex <= hi else "-", *cells
            )
        console.print(table)
        others = sorted(set(rows) - {n for s in apis for n in (s.request_name, s.response_name)})
        console.print(f"headers and data messages: {', '.join(others)}")
        console.print(
            f"{summary['api_keys']} API keys, {api_pairs} request/response (message, version) pairs, "
            f"{len(pairs)} pairs in all, {summary['examples']} values round-tripped through the generated "
            f"and the interpreted codec: {'all agree' if not failed else f'{len(failed)} failures'}"
        )
        for line in failed[:20]:
            console.print(f"[red]FAIL[/red] {line}")
    if failed:
        sys.exit(1)


@codecs.command("apis")
def apis_command() -> None:
    """List every API key with its versions and listeners."""
    table = Table()
    for column in ("key", "API", "versions", "flexible", "listeners", "deprecated"):
        table.add_column(column)
    for s in api_schemas():
        lo, hi = s.valid_versions
        flex = s.flexible_versions[0]
        dep = s.deprecated_versions
        table.add_row(
            str(s.api_key),
            s.name,
            f"{lo}-{hi}",
            f"{flex}+" if flex <= hi else "-",
            ", ".join(s.listeners),
            f"{dep[0]}-{dep[1]}" if dep[0] <= dep[1] else "",
        )
    Console().print(table)


@codecs.command("decode")
@click.argument("hex_frame")
@click.option(
    "--response-to",
    nargs=2,
    type=int,
    metavar="API_KEY VERSION",
    help="decode a response to a request of this API key and version",
)
def decode_command(hex_frame: str, response_to: tuple[int, int] | None) -> None:
    """Decode one frame given in hex (without its 4-byte size prefix)."""
    try:
        frame = bytes.fromhex(hex_frame.replace(" ", ""))
    except ValueError as exc:
        raise click.BadParameter(f"not hex: {exc}") from None
    try:
        header, body = decode_response(frame, *response_to) if response_to else decode_request(frame)
    except DecodeError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(repr(header))
    click.echo(repr(body))


@codecs.command("releases")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per release instead of the table")
def releases_command(as_json: bool) -> None:
    """What each Apache Kafka release advertises, what the codecs cover and the broker serves."""
    from kconform.codecs.releases import kafka_releases, uncovered_versions
    from kconform.reference_broker.dispatch import release_versions
    from kconform.reference_broker.forwarding import broker_handlers

    handlers = broker_handlers()
    rows = []
    for release in kafka_releases():
        pairs = sum(hi - lo + 1 for lo, hi in release.advertised.values())
        uncovered = sum(hi - lo + 1 for _, lo, hi in uncovered_versions(release))
        _, served, _ = release_versions(release, handlers)
        rows.append(
            {
                "release": release.version,
                "apis": len(release.advertised),
                "pairs": pairs,
                "codec_pairs": pairs - uncovered,
                "broker_apis": len(served),
                "broker_pairs": sum(hi - lo + 1 for lo, hi in served.values()),
            }
        )
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        return
    table = Table(title="Apache Kafka releases: (API, version) pairs advertised in ApiVersions")
    for column in ("release", "APIs", "pairs", "in the codecs", "broker APIs", "broker pairs"):
        table.add_column(column, justify="left" if column == "release" else "right")
    for row in rows:
        table.add_row(*(str(v) for v in row.values()))
    Console().print(table)


@codecs.command("refresh-spec")
@click.argument("source", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--check", is_flag=True, help="only say whether the extract and codecs are current; exit 1 if not"
)
def refresh_spec_command(source: Path, check: bool) -> None:
    """Rebuild the committed extract from Apache Kafka's definitions in SOURCE and regenerate the codecs.

    SOURCE is a kafka-spec folder (message/, kafka-X.Y/message/, coordinator/, metadata/ and the two
    tables) or one release's folder of message definitions, laid over what the extract has."""
    from kconform.codecs.generate import main as generate

    code = generate(["--from", str(source), *(["--check"] if check else [])])
    if code:
        sys.exit(code)
    if not check:
        click.echo("extract and codecs regenerated: run the tests, then commit codecs/")
