"""Command-line misuses are one ``Error: ...`` line on stderr and exit status 2, never a traceback: a data
directory that cannot be created or written, one that belongs to another node (Kafka's
``MetaPropertiesEnsemble.verify`` refuses a node id that differs), a corrupt ``kconform-metadata.json``,
``kconform diff --examples`` below 1 and ``kconform chaos --toxiproxy`` at a closed port."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys

import pytest

KCONFORM = [sys.executable, "-m", "kconform.harness.cli"]


def _misuse(*args: str, timeout: float = 60) -> str:
    """Run ``kconform ARGS``; assert exit 2, one stderr line and no traceback; return that line."""
    done = subprocess.run(
        [*KCONFORM, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "KCONFORM_PARENT_PID": str(os.getpid())},
    )
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("Error: ")
    return lines[0]


def _broker(data_dir) -> list[str]:
    return ["broker", "--data-dir", str(data_dir), "--listen", "127.0.0.1:0"]


def test_a_data_dir_under_a_file(tmp_path):
    (tmp_path / "a-file").write_text("not a directory")
    line = _misuse(*_broker(tmp_path / "a-file" / "data"))
    assert "cannot create data directory" in line and "Not a directory" in line


@contextlib.contextmanager
def _read_only_bind(source, target):
    source.mkdir()
    target.mkdir()
    bound = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True, text=True)
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here ({bound.stderr.strip() or 'mount refused'})")
    try:
        remounted = subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(target)], capture_output=True, text=True
        )
        if remounted.returncode != 0:
            pytest.skip(f"cannot remount read-only here ({remounted.stderr.strip()})")
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


def test_a_data_dir_on_a_read_only_mount(tmp_path):
    with _read_only_bind(tmp_path / "source", tmp_path / "read-only") as read_only:
        created = _misuse(*_broker(read_only / "data"))
        (tmp_path / "source" / "data").mkdir()
        written = _misuse(*_broker(read_only / "data"))
    assert "cannot create data directory" in created and "Read-only file system" in created
    assert "cannot write to data directory" in written and "Read-only file system" in written


def test_a_data_dir_of_another_node(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "meta.properties").write_text("version=1\ncluster.id=q1Sh-9_ISia_zwGINzRvyQ\nnode.id=7\n")
    line = _misuse(*_broker(data), "--node-id", "3")
    assert "meta.properties belongs to node 7, not 3" in line


@pytest.mark.parametrize(
    "content",
    ["{not json", '{"topics": [{"name": "orders"}]}', '{"topics": 5}'],
    ids=["json", "topic", "list"],
)
def test_a_corrupt_legacy_topics_file(tmp_path, content):
    data = tmp_path / "data"
    data.mkdir()
    (data / "kconform-metadata.json").write_text(content)
    line = _misuse(*_broker(data))
    assert "cannot read the topic metadata in" in line and "kconform-metadata.json" in line


@pytest.mark.parametrize("count", ["0", "-1"])
def test_diff_with_no_examples(count):
    line = _misuse("diff", "--examples", count)
    assert f"--examples must be at least 1, got {count}" in line


def test_chaos_with_a_toxiproxy_at_a_closed_port(tmp_path):
    with socket.socket() as probe:  # a port that was free a moment ago and has no listener now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    line = _misuse("chaos", "--toxiproxy", f"127.0.0.1:{port}", "--out", str(tmp_path / "run"))
    assert f"no Toxiproxy answers at http://127.0.0.1:{port}" in line
    assert not (tmp_path / "run").exists()
