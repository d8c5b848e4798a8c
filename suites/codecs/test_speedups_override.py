"""``KCONFORM_SPEEDUPS=PATH`` loads the native module from a build elsewhere (the sanitizer run in
``ci/sanitizers.sh`` depends on it); a path that is no extension is an error, not a silent fallback."""

from __future__ import annotations

import os
import subprocess
import sys

from kconform.codecs.engines import NATIVE_AVAILABLE

PROBE = "from kconform.codecs import _native as n; print(n._speedups.__file__ if n._speedups else None)"


def _probe(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PROBE], env={**os.environ, **env}, capture_output=True, text=True, timeout=60
    )


def test_the_override_loads_the_named_build(tmp_path):
    assert NATIVE_AVAILABLE, "the native module is built by pip install (a C compiler is on this machine)"
    from kconform.codecs import _native

    installed = _native._speedups.__file__
    copy = tmp_path / os.path.basename(installed)
    copy.write_bytes(open(installed, "rb").read())
    done = _probe({"KCONFORM_SPEEDUPS": str(copy)})
    assert done.returncode == 0 and done.stdout.strip() == str(copy), done.stderr
    refused = _probe({"KCONFORM_SPEEDUPS": str(tmp_path / "nothing.so")})
    assert refused.returncode != 0
