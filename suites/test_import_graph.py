"""The package's shape, checked on its import graph (every ``import`` and ``from ... import`` in the
source, read with ``ast``, at any depth: imports inside functions count, since a deferred import is
still a dependency):

- no import circle anywhere (a package's ``__init__`` is a module like any other);
- ``kconform.codecs`` imports nothing else of kconform: it is the foundation everyone may use;
- ``kconform.traces`` imports nothing else of kconform: it is the contract between writers and readers;
- the broker (``reference_broker``) never imports the harness, the reports or the fault layer;
- the reports (``spark_reports``) never import the harness;
- the fault layer (``faults``) imports only the codecs;
- no coordinator core module (groups, transactions, the coordinator runtime) imports a request handler.

The planted cases at the end show each check failing on a tree that breaks it."""

from __future__ import annotations

import ast
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PARTS = ("codecs", "reference_broker", "harness", "faults", "spark_reports", "traces")
GENERATED = (
    "kconform.codecs.messages.",
    "kconform.codecs.coordinator_records.",
    "kconform.codecs.metadata_records.",
)

# part -> the parts it may import (itself always)
ALLOWED = {
    "codecs": set(),
    "traces": set(),
    "faults": {"codecs"},
    "reference_broker": {"codecs"},
    "spark_reports": {"codecs", "traces"},
    "harness": {"codecs", "traces", "reference_broker", "faults", "spark_reports"},
}
COORDINATOR_CORE = ("kconform.reference_broker.groups", "kconform.reference_broker.transactions",
                    "kconform.reference_broker.coordinator_runtime")  # fmt: skip
HANDLERS = "kconform.reference_broker.handlers"


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for part in PARTS:
        for path in (root / part).rglob("*.py"):
            relative = path.relative_to(root / part).with_suffix("")
            names = [n for n in relative.parts if n != "__init__"]
            found[".".join(["kconform", part, *names])] = path
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    known = modules(root)
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [
                    f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names
                ]
            else:
                continue
            for target in targets:
                while target not in known and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in known and target != name:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def forbidden_arrows(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for source, targets in sorted(graph.items()):
        source_part = source.split(".")[1]
        for target in sorted(targets):
            target_part = target.split(".")[1]
            if target_part != source_part and target_part not in ALLOWED[source_part]:
                problems.append(f"{source} -> {target} ({source_part} may not import {target_part})")
            if source.startswith(COORDINATOR_CORE) and target.startswith(HANDLERS):
                problems.append(f"{source} -> {target} (a coordinator core module imports a handler)")
    return problems


def test_the_package_has_no_import_circle():
    assert circles(import_graph(REPO)) == []


def test_every_import_follows_the_layering():
    assert forbidden_arrows(import_graph(REPO)) == []


def test_the_graph_sees_the_package():
    """Guard against a checker that passes because it read nothing."""
    graph = import_graph(REPO)
    hand_written = [m for m in modules(REPO) if not m.startswith(GENERATED)]
    assert len(hand_written) > 200
    assert "kconform.reference_broker.groups" in graph["kconform.reference_broker.node"]
    assert "kconform.reference_broker.groups.coordinator" in graph["kconform.reference_broker.groups"]
    assert any(t.startswith("kconform.codecs") for t in graph["kconform.reference_broker.handlers.produce"])


# ---- the checks fail on trees that break them ----------------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for part in PARTS:
        (tmp_path / part).mkdir(parents=True, exist_ok=True)
        (tmp_path / part / "__init__.py").write_text("")
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def test_a_planted_circle_is_found(tmp_path):
    root = _tree(tmp_path, {
        "reference_broker/storage/__init__.py": "",
        "reference_broker/storage/_a.py": "from ._b import thing\n",
        "reference_broker/storage/_b.py": "def thing():\n    from . import _a\n",
    })  # fmt: skip
    assert circles(import_graph(root)) == [
        ["kconform.reference_broker.storage._a", "kconform.reference_broker.storage._b"]
    ]


@pytest.mark.parametrize(
    ("relative", "text", "complaint"),
    [
        ("codecs/framing.py", "from kconform.reference_broker import node\n", "codecs may not import"),
        ("reference_broker/process.py", "import kconform.harness.cli\n", "reference_broker may not import"),
        ("spark_reports/runs.py", "from kconform.harness import campaign\n", "spark_reports may not import"),
        ("traces/schema.py", "from kconform.codecs import errors\n", "traces may not import"),
        (
            "reference_broker/groups/coordinator.py",
            "from ..handlers import kip848_groups\n",
            "imports a handler",
        ),
    ],
)
def test_a_planted_forbidden_import_is_found(tmp_path, relative, text, complaint):
    root = _tree(tmp_path, {
        "codecs/errors.py": "", "reference_broker/node.py": "", "reference_broker/groups/__init__.py": "",
        "reference_broker/handlers/__init__.py": "", "reference_broker/handlers/kip848_groups.py": "",
        "harness/cli.py": "", "harness/campaign.py": "", relative: text,
    })  # fmt: skip
    problems = forbidden_arrows(import_graph(root))
    assert any(complaint in p for p in problems), problems
