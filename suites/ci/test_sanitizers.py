"""The native codec under AddressSanitizer and UBSan, in the default run: ``ci/sanitizers.sh`` builds
``codecs/_speedups.c`` with both and runs the native and record-batch suites on that build (native
against pure-Python decoding and encoding, mutated and truncated input, every codec); any report fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_native_codec_suites_pass_under_asan_and_ubsan():
    assert shutil.which("gcc"), "gcc is needed to build the sanitized module"
    done = subprocess.run(
        ["bash", str(ROOT / "ci" / "sanitizers.sh")],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "PYTHON": sys.executable},
    )
    tail = (done.stdout + done.stderr)[-4000:]
    assert done.returncode == 0, tail
    assert "ERROR: AddressSanitizer" not in tail and "runtime error:" not in tail
    assert " passed" in done.stdout
