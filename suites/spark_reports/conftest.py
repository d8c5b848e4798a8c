"""Headless Chromium for the report suites: render a dashboard, read back the DOM the browser built
and keep a screenshot. ``render_in_chromium`` is a plain function so that other suites can copy the
one call; the fixtures add the skip when Chromium is absent and the artefact folder. ``spark`` is the
local Spark session the roll-up agreement suites (``test_rollup_*.py``) share."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
# Nothing the browser does on its own (updates, sync, QUIC probes) may reach the network or slow the
# run: the dashboard must render from the file alone.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
WINDOW = (1280, 2400)


@dataclass(frozen=True, slots=True)
class Rendered:
    dom: str  # the DOM after the page loaded and its script ran, serialised
    screenshot: Path


def chromium_binary() -> str | None:
    """Debian's chromium, or whatever ``chromium`` is on PATH."""
    return CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")


def render_in_chromium(page: Path, screenshot: Path, profile: Path, *, timeout: float = 90.0) -> Rendered:
    """Render ``page`` (a local HTML file) twice with headless Chromium: once for the DOM, once for a
    PNG of ``WINDOW`` pixels at ``screenshot``. ``profile`` is an empty folder for the browser's own
    state, so runs never share one."""
    binary = chromium_binary()
    assert binary, "chromium is not installed: run ci/install-tools.sh"
    base = [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
    url = page.resolve().as_uri()
    dom = subprocess.run(
        [*base, "--dump-dom", url], capture_output=True, text=True, timeout=timeout, check=True
    ).stdout
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    shot = subprocess.run(
        [*base, f"--screenshot={screenshot}", f"--window-size={WINDOW[0]},{WINDOW[1]}", url],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert screenshot.is_file(), (
        f"chromium wrote no screenshot (exit {shot.returncode}): {shot.stderr[-2000:]}"
    )
    return Rendered(dom, screenshot)


@pytest.fixture(scope="session")
def chromium() -> Callable[..., Rendered]:
    """``render_in_chromium``, once Chromium is known to be there (test modules cannot import a
    conftest under ``--import-mode=importlib``, so the function comes as a fixture)."""
    if chromium_binary() is None:
        pytest.skip("chromium is not installed: run ci/install-tools.sh (Debian package chromium)")
    return render_in_chromium


@pytest.fixture(scope="session")
def artefacts_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots are kept: ``$KCONFORM_ARTEFACTS`` (CI uploads it), else a pytest temp folder."""
    configured = os.environ.get("KCONFORM_ARTEFACTS")
    path = Path(configured) if configured else tmp_path_factory.mktemp("artefacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def spark():
    """One local Spark session for the module (it takes seconds to start)."""
    from kconform.spark_reports.session import SparkUnavailable, spark_session

    try:
        with spark_session() as session:
            yield session
    except SparkUnavailable as exc:
        pytest.skip(f"Spark cannot start here: {exc}")
