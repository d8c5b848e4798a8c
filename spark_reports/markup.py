"""Small helpers for writing HTML by hand: escaping, and numbers formatted for people.

Everything that reaches the page from a trace (target names, signatures, case paths, history lines)
passes through ``esc``; nothing in the dashboard is trusted markup except what this package writes."""

from __future__ import annotations

import html
import re

__all__ = ["esc", "fmt_count", "fmt_rate", "fmt_us", "slug", "version_label"]


def esc(value: object) -> str:
    """Text or attribute value, escaped (quotes too, so it is safe inside either)."""
    return html.escape("" if value is None else str(value), quote=True)


def slug(value: str) -> str:
    """A fragment of an id or class name made from free text: letters, digits and dashes."""
    return re.sub(r"[^A-Za-z0-9]+", "-", value).strip("-").lower() or "x"


def fmt_count(n: int | float) -> str:
    """1234567 -> ``1,234,567``; large enough numbers keep their digits, people skim the commas."""
    return f"{n:,.0f}" if isinstance(n, float) else f"{n:,}"


def fmt_rate(rate: float | None) -> str:
    if rate is None:
        return "–"
    if rate >= 1.0:
        return "100%"
    if rate > 0.999:  # never round a failure away to 100%
        return ">99.9%"
    return f"{rate * 100:.1f}%"


def fmt_us(us: float | None) -> str:
    """A latency in the unit that keeps it short: ``850 µs``, ``12.3 ms``, ``4.1 s``."""
    if us is None:
        return "–"
    if us < 1000:
        return f"{us:.0f} µs"
    if us < 1_000_000:
        ms = us / 1000
        return f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"
    return f"{us / 1_000_000:.1f} s"


def version_label(api_version: int) -> str:
    """Chaos runs record client operations (a send, a poll) rather than one protocol version: -1."""
    return f"v{api_version}" if api_version >= 0 else "client op"
