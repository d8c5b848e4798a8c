"""Every third-party module a suite imports comes from a distribution ``pyproject.toml`` declares, in the
dependencies or an extra that ``.[all]`` installs; so the README's ``pip install -e '.[all]'`` is all the
suites need, and a missing module is a broken install that fails, never a test that always skips (as the
CI-workflow test did while PyYAML was undeclared)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

SUITES = Path(__file__).resolve().parent
PYPROJECT = SUITES.parent / "pyproject.toml"
OURS = {"kconform", "__future__"}


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement (PEP 503: case and runs of -_. folded)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, f"pyproject.toml: cannot read the requirement {requirement!r}"
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def declared_for_all(pyproject: dict) -> set[str]:
    """The distributions ``pip install '.[all]'`` installs by name: the dependencies and every extra
    ``all`` names (``kconform[spark,...]``), followed through."""
    project = pyproject["project"]
    extras = project.get("optional-dependencies", {})
    names = {_name(r) for r in project.get("dependencies", [])}
    pending, seen = ["all"], set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for requirement in extras.get(extra, []):
            self_extras = re.fullmatch(r"\s*kconform\[([^\]]+)\]\s*", requirement)
            if self_extras:
                pending += [e.strip() for e in self_extras.group(1).split(",")]
            else:
                names.add(_name(requirement))
    return names


def third_party_imports(root: Path) -> dict[str, set[str]]:
    """Top-level module -> the files under ``root`` that import it (``import``, ``from ... import``, or
    ``pytest.importorskip("literal")``), leaving out the standard library and our own package."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            modules: list[str] = []
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            elif (
                isinstance(node, ast.Call)
                and ast.unparse(node.func).endswith("importorskip")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                modules = [str(node.args[0].value)]
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in OURS:
                    found.setdefault(top, set()).add(path.relative_to(root).as_posix())
    return found


def undeclared(imports: dict[str, set[str]], declared: set[str]) -> dict[str, str]:
    """Module -> what is wrong, for every imported module no declared distribution provides."""
    providers = packages_distributions()
    problems = {}
    for module, files in sorted(imports.items()):
        where = ", ".join(sorted(files)[:3])
        dists = {_name(d) for d in providers.get(module, [])}
        if not dists:
            problems[module] = f"not installed, so its distribution is unknown (imported by {where})"
        elif not dists & declared:
            problems[module] = f"from {sorted(dists)}, which .[all] does not declare (imported by {where})"
    return problems


def test_every_module_the_suites_import_is_declared_for_all():
    pyproject = tomllib.loads(PYPROJECT.read_text())
    problems = undeclared(third_party_imports(SUITES), declared_for_all(pyproject))
    assert not problems, (
        "add these to pyproject.toml (dependencies, or an extra that [all] includes), then "
        "pip install -e '.[all]':\n" + "\n".join(f"  {m}: {why}" for m, why in problems.items())
    )


def test_an_undeclared_test_dependency_is_reported():
    """Planted: pyproject.toml as it was before issue 17, without PyYAML; the workflow test imports yaml."""
    text = PYPROJECT.read_text()
    without = re.sub(r"(?m)^dev = \[.*$", 'dev = ["ruff>=0.5"]', text)
    assert without != text
    problems = undeclared(third_party_imports(SUITES), declared_for_all(tomllib.loads(without)))
    assert list(problems) == ["yaml"]
    assert "pyyaml" in problems["yaml"] and "harness/test_docker_target.py" in problems["yaml"]
