"""``python -m kconform.codecs.generate --spec DIR``: write the message modules from Kafka's definitions."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .emit_messages import emit_module
from .emit_registry import emit_error_codes, emit_index, emit_registry, module_groups
from .spec import SpecError, load_spec_dir

OUT_DIR = Path(__file__).resolve().parent.parent / "messages"
PACKAGE_INIT = "__init__.py"  # hand-written, never touched


def render(spec_dir: Path, errors_file: Path) -> dict[str, str]:
    """Every generated file, by name, as text."""
    messages = load_spec_dir(spec_dir)
    files = {f"{module}.py": emit_module(members) for module, members in module_groups(messages).items()}
    files["_registry.py"] = emit_registry(messages)
    files["_index.py"] = emit_index(messages)
    files["_error_codes.py"] = emit_error_codes(errors_file)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kconform.codecs.generate", description=__doc__)
    parser.add_argument(
        "--spec", required=True, type=Path, help="folder of Kafka's message/*.json definitions"
    )
    parser.add_argument("--errors", type=Path, help="error-code table (default: SPEC/../errors.tsv)")
    parser.add_argument(
        "--out", type=Path, default=OUT_DIR, help="where the modules go (default: the package)"
    )
    parser.add_argument(
        "--check", action="store_true", help="compare with --out instead of writing; exit 1 if stale"
    )
    args = parser.parse_args(argv)
    errors_file = args.errors or args.spec / ".." / "errors.tsv"
    try:
        files = render(args.spec, errors_file)
    except (SpecError, OSError) as exc:
        print(f"generate: {exc}", file=sys.stderr)
        return 2
    out: Path = args.out
    existing = {p.name for p in out.glob("*.py") if p.name != PACKAGE_INIT} if out.exists() else set()
    if args.check:
        stale = sorted(
            name
            for name, text in files.items()
            if not (out / name).exists() or (out / name).read_text() != text
        ) + sorted(existing - files.keys())
        for name in stale:
            print(f"stale: {out / name}", file=sys.stderr)
        if stale:
            print(
                "run: python -m kconform.codecs.generate --spec ../shared/kafka-spec/message", file=sys.stderr
            )
        return 1 if stale else 0
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        target = out / name
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
    for name in existing - files.keys():  # modules of messages that no longer exist
        (out / name).unlink()
    print(f"wrote {len(files)} modules to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
