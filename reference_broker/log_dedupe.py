"""Repeated log messages once, with a count. A broker out of file descriptors has asyncio's accept loop
log every failed accept with its traceback, thousands a second; this lets the first record of a kind
(its logger, level and message template) through with its traceback, holds back the repeats for a
window, and says "... repeated N times in the last S s" once the window has closed: at the next record
of any kind, or when the filter is closed.

``RepeatWindows`` decides, with the clock passed in; ``RepeatedMessageFilter`` applies its decisions to
one logging handler."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

__all__ = ["RepeatWindows", "Repeated", "RepeatedMessageFilter", "install"]

_MAX_KINDS = 1024  # windows kept at once; beyond that, the oldest is closed early


@dataclass(frozen=True, slots=True)
class Repeated:
    """``count`` records of ``kind`` held back over ``seconds``."""

    kind: Hashable
    count: int
    seconds: float


@dataclass(slots=True)
class _Window:
    opened: float
    closes: float
    held: int = 0


class RepeatWindows:
    """Which records to let through. ``admit(kind)`` says whether this record passes and which closed
    windows to report (a window that held nothing back reports nothing)."""

    def __init__(self, window_s: float, clock: Callable[[], float]) -> None:
        if window_s <= 0:
            raise ValueError(f"the window must be positive, got {window_s!r}")
        self._window_s = window_s
        self._clock = clock
        self._windows: dict[Hashable, _Window] = {}

    def admit(self, kind: Hashable) -> tuple[bool, list[Repeated]]:
        now = self._clock()
        closed = self._close(lambda window: window.closes <= now, now)
        window = self._windows.get(kind)
        if window is not None:
            window.held += 1
            return False, closed
        if len(self._windows) >= _MAX_KINDS:
            oldest = next(iter(self._windows))
            closed += self._close(lambda window: window is self._windows[oldest], now)
        self._windows[kind] = _Window(opened=now, closes=now + self._window_s)
        return True, closed

    def is_open(self, kind: Hashable) -> bool:
        return kind in self._windows

    def close_all(self) -> list[Repeated]:
        return self._close(lambda window: True, self._clock())

    def _close(self, due: Callable[[_Window], bool], now: float) -> list[Repeated]:
        ended = [kind for kind, window in self._windows.items() if due(window)]
        reports = []
        for kind in ended:
            window = self._windows.pop(kind)
            if window.held:
                reports.append(Repeated(kind, window.held, now - window.opened))
        return reports


class RepeatedMessageFilter(logging.Filter):
    """A filter for one handler: repeats are dropped, and the count of a closed window goes out through
    that handler as a record of the same logger and level, without a traceback."""

    def __init__(
        self, handler: logging.Handler, window_s: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._handler = handler
        self._windows = RepeatWindows(window_s, clock)
        self._first: dict[Hashable, logging.LogRecord] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "kconform_repeat_count", None) is not None:
            return True  # our own report
        kind = (record.name, record.levelno, str(record.msg))
        passes, closed = self._windows.admit(kind)
        self._report(closed)
        if passes:
            self._first[kind] = record
        return passes

    def close(self) -> None:
        """Report every window still open (at shutdown)."""
        self._report(self._windows.close_all())

    def _report(self, closed: list[Repeated]) -> None:
        for repeated in closed:
            first = self._first.pop(repeated.kind, None)
            if first is None:
                continue
            summary = logging.LogRecord(
                first.name,
                first.levelno,
                first.pathname,
                first.lineno,
                "%s ... repeated %d times in the last %.0f s",
                (_first_line(first), repeated.count, repeated.seconds),
                None,
            )
            summary.kconform_repeat_count = repeated.count
            self._handler.handle(summary)
        for kind in list(self._first):  # a first record whose window closed with nothing held back
            if not self._windows.is_open(kind):
                del self._first[kind]


def _first_line(record: logging.LogRecord) -> str:
    try:
        message = record.getMessage()
    except Exception:  # a record whose arguments do not fit its template still gets counted
        message = str(record.msg)
    return message.splitlines()[0] if message else message


def install(
    handlers: list[logging.Handler] | None = None,
    *,
    window_s: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
) -> list[RepeatedMessageFilter]:
    """Put a filter on each handler (the root logger's by default, which asyncio's logger reaches)."""
    filters = []
    for handler in logging.getLogger().handlers if handlers is None else handlers:
        repeat_filter = RepeatedMessageFilter(handler, window_s, clock)
        handler.addFilter(repeat_filter)
        filters.append(repeat_filter)
    return filters
