"""The README's Python examples run, and its two commands are the ones CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_python_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```\n((?:python3|bash) .*?)\n```", README)
    assert len(commands) == 2, "the README has exactly two set-up commands"
    assert commands[1] in (ROOT / ".ci" / "run").read_text()
