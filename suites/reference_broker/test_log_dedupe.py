"""Repeated log records once, then a count (``reference_broker.log_dedupe``): the rules with a clock the
test moves, the filter on a real handler, and a broker out of file descriptors whose stderr stays short
and which answers again once connections close."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import resource
import socket
import subprocess
import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.codecs.messages import ApiVersionsRequest
from kconform.reference_broker.log_dedupe import Repeated, RepeatedMessageFilter, RepeatWindows

from ..support.rawclient import RawClient


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# ---- the rules -----------------------------------------------------------------------------------------


def test_the_first_passes_repeats_are_held_and_counted_when_the_window_closes():
    clock = Clock()
    windows = RepeatWindows(10.0, clock)
    assert windows.admit("a") == (True, [])
    for _ in range(5):
        clock.now += 1
        assert windows.admit("a") == (False, [])
    clock.now = 111.0
    assert windows.admit("b") == (True, [Repeated("a", 5, 11.0)])
    assert windows.admit("a") == (True, [])  # a new window, its first record passes again


def test_a_window_with_no_repeats_reports_nothing_and_close_all_reports_the_rest():
    clock = Clock()
    windows = RepeatWindows(5.0, clock)
    windows.admit("quiet")
    windows.admit("loud")
    windows.admit("loud")
    clock.now += 2
    assert windows.close_all() == [Repeated("loud", 1, 2.0)]
    assert windows.admit("quiet") == (True, [])


def test_a_window_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        RepeatWindows(0, Clock())


@given(st.lists(st.tuples(st.sampled_from("abc"), st.floats(0, 30)), max_size=60))
def test_every_record_is_either_passed_or_counted_once(steps):
    clock = Clock()
    windows = RepeatWindows(7.0, clock)
    passed, counted = 0, 0
    for kind, wait in steps:
        clock.now += wait
        through, closed = windows.admit(kind)
        passed += through
        counted += sum(r.count for r in closed)
    counted += sum(r.count for r in windows.close_all())
    assert passed + counted == len(steps)


# ---- on a handler ----------------------------------------------------------------------------------------


class ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def test_the_filter_keeps_the_first_traceback_and_reports_the_repeats():
    clock = Clock()
    handler = ListHandler()
    repeat_filter = RepeatedMessageFilter(handler, window_s=10.0, clock=clock)
    handler.addFilter(repeat_filter)
    log = logging.getLogger("kconform.test.dedupe")
    log.propagate = False
    log.addHandler(handler)
    try:
        for attempt in range(1000):
            try:
                raise OSError(24, "Too many open files")
            except OSError:
                log.exception("accept failed on %s", f"port {attempt}")
            clock.now += 0.001
        clock.now += 10
        log.warning("something else")
        repeat_filter.close()
    finally:
        log.removeHandler(handler)
    text = "\n".join(handler.lines)
    assert text.count("Traceback") == 1
    assert "accept failed on port 0" in text
    assert "accept failed on port 0 ... repeated 999 times in the last 11 s" in text
    assert handler.lines[-1] == "WARNING kconform.test.dedupe: something else"


# ---- a broker out of file descriptors --------------------------------------------------------------------


def _limit_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))


def _start_broker(tmp_path):
    stderr = open(tmp_path / "stderr.txt", "w+b")  # noqa: SIM115 (closed by the test)
    process = subprocess.Popen(
        [sys.executable, "-m", "kconform.reference_broker", "--data-dir", str(tmp_path / "data")]
        + ["--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=stderr,
        preexec_fn=_limit_files,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = process.stdout.readline().decode()
        found = re.search(r"listening on ([\d.]+):(\d+)", line)
        if found:
            return process, stderr, found.group(1), int(found.group(2))
        if not line and process.poll() is not None:
            break
    process.kill()
    stderr.seek(0)
    raise AssertionError(f"the broker did not start: {stderr.read().decode()[-2000:]}")


@pytest.mark.slow
def test_a_broker_out_of_file_descriptors_logs_once_and_answers_again(tmp_path):
    process, stderr, host, port = _start_broker(tmp_path)
    held: list[socket.socket] = []
    try:
        for _ in range(150):  # far past the broker's 64 descriptors; the kernel's backlog takes the rest
            held.append(socket.create_connection((host, port), timeout=5))
        time.sleep(3.5)  # asyncio retries the accept every second, logging each failure
        for sock in held:
            sock.close()
        held.clear()
        time.sleep(1.5)

        async def api_versions():
            client = await RawClient.connect(host, port)
            try:
                return await client.call(
                    18,
                    3,
                    ApiVersionsRequest(client_software_name="kconform-test", client_software_version="1"),
                )
            finally:
                await client.close()

        answer = asyncio.run(asyncio.wait_for(api_versions(), 20))
        assert answer.error_code == 0
        assert process.poll() is None
        stderr.seek(0)
        text = stderr.read().decode(errors="replace")
        assert "Too many open files" in text, text[-2000:]
        assert text.count("Traceback") <= 3, text[-4000:]
    finally:
        for sock in held:
            sock.close()
        process.terminate()
        process.wait(20)
        stderr.close()
