"""``python -m kconform.codecs.generate`` (and ``kconform codecs refresh-spec``): write the codec modules
from the committed definitions.

The definitions are the project's facts-only extract (``codecs/definitions``, see ``extract``);
``--from DIR`` first rebuilds that extract from a folder of Apache Kafka's own definitions (a kafka-spec
folder of layers, or one release's ``message/`` folder laid over what the extract has)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .emit_messages import emit_module
from .emit_records import emit_record_package
from .emit_registry import emit_error_codes, emit_index, emit_registry, emit_releases, module_groups
from .extract import DEFINITIONS_DIR, build_extract, source_layers, write_extract
from .spec import SpecError, load_spec_dir

CODECS_DIR = Path(__file__).resolve().parent.parent
OUT_DIR = CODECS_DIR / "messages"
# package folder -> the definitions folder it is generated from
RECORD_PACKAGES = {"coordinator_records": "coordinator", "metadata_records": "metadata"}
GENERATED_PACKAGES = ("messages", *RECORD_PACKAGES)
HAND_WRITTEN = {"messages/__init__.py"}


def render(definitions: Path = DEFINITIONS_DIR) -> dict[str, str]:
    """Every generated file, by path relative to the codecs package, as text."""
    messages = load_spec_dir(definitions / "messages")
    files = {
        f"messages/{module}.py": emit_module(members) for module, members in module_groups(messages).items()
    }
    files["messages/_registry.py"] = emit_registry(messages)
    files["messages/_index.py"] = emit_index(messages)
    files["messages/_error_codes.py"] = emit_error_codes(definitions / "errors.tsv")
    files["messages/_releases.py"] = emit_releases(definitions / "api-versions.tsv", messages)
    for package, folder in RECORD_PACKAGES.items():
        records = load_spec_dir(definitions / folder)
        for name, text in emit_record_package(records, folder).items():
            files[f"{package}/{name}"] = text
    return files


def _existing(out: Path) -> set[str]:
    found = set()
    for package in GENERATED_PACKAGES:
        for path in (out / package).glob("*.py") if (out / package).is_dir() else ():
            found.add(f"{package}/{path.name}")
    return found - HAND_WRITTEN


def stale_files(files: dict[str, str], out: Path) -> list[str]:
    """Generated files that differ from ``files``, are missing, or should no longer exist."""
    differ = [
        name for name, text in files.items() if not (out / name).exists() or (out / name).read_text() != text
    ]
    return sorted(differ) + sorted(_existing(out) - files.keys())


def write_files(files: dict[str, str], out: Path) -> None:
    for name, text in files.items():
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
    for name in _existing(out) - files.keys():  # modules of messages that no longer exist
        (out / name).unlink()


def _stale_extract(extract: dict[str, str], folder: Path) -> list[str]:
    kinds = ("messages", "coordinator", "metadata")
    present = {f"{kind}/{p.name}" for kind in kinds for p in (folder / kind).glob("*.json")}
    differ = [n for n, t in extract.items() if not (folder / n).exists() or (folder / n).read_text() != t]
    return sorted(differ) + sorted(present - extract.keys())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kconform.codecs.generate", description=__doc__)
    parser.add_argument(
        "--definitions",
        type=Path,
        default=DEFINITIONS_DIR,
        help="the facts-only extract to generate from (default: the committed one)",
    )
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="rebuild the extract from Kafka's definitions in this folder first",
    )
    parser.add_argument(
        "--out", type=Path, default=CODECS_DIR, help="the codecs package folder (default: this package)"
    )
    parser.add_argument(
        "--check", action="store_true", help="compare with --out instead of writing; exit 1 if stale"
    )
    args = parser.parse_args(argv)
    try:
        if args.source is not None:
            source = source_layers(args.source)
            # one release's message folder is laid over what the extract has; a full set stands alone
            base = args.definitions if source.coordinator is None else None
            extract = build_extract(source, base)
            if args.check:
                stale = _stale_extract(extract, args.definitions)
                for name in stale:
                    print(f"stale: {args.definitions / name}", file=sys.stderr)
                if stale:
                    print(f"run: kconform codecs refresh-spec {args.source}", file=sys.stderr)
                    return 1
            else:
                changed = write_extract(extract, args.definitions)
                print(f"extract: {len(changed)} files changed in {args.definitions}")
        files = render(args.definitions)
    except (SpecError, OSError) as exc:
        print(f"generate: {exc}", file=sys.stderr)
        return 2
    if args.check:
        stale = stale_files(files, args.out)
        for name in stale:
            print(f"stale: {args.out / name}", file=sys.stderr)
        if stale:
            print("run: python -m kconform.codecs.generate", file=sys.stderr)
        return 1 if stale else 0
    write_files(files, args.out)
    print(f"wrote {len(files)} modules to {args.out}")
    return 0
