"""Exchanges as trace rows, and the per-API summary ``kconform dissect`` prints."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from kconform.traces import TraceRow

from ._exchange import Exchange

__all__ = ["ApiSummary", "summarise", "trace_rows"]

UNKNOWN = -1
"""api_key and api_version in a trace row for a response whose request is not in the capture."""


def trace_rows(exchanges: Iterable[Exchange], *, source: str | None = None) -> Iterator[TraceRow]:
    """One row per exchange: target ``capture:<server address>``, the case id ``SOURCE:PACKET`` (the
    packet that completed the request, as Wireshark numbers it), and the notes in ``verdict``."""
    for exchange in exchanges:
        packet = exchange.first_packet
        yield TraceRow(
            target=f"capture:{exchange.server}",
            api_key=UNKNOWN if exchange.api_key is None else exchange.api_key,
            api_version=UNKNOWN if exchange.api_version is None else exchange.api_version,
            outcome=exchange.outcome,
            case_id=f"{source}:{packet}" if source else f"packet:{packet}",
            api_name=exchange.api_name,
            correlation_id=exchange.correlation_id,
            request_bytes=exchange.request_bytes,
            response_bytes=exchange.response_bytes,
            latency_us=exchange.latency_us,
            error_codes=list(exchange.error_codes),
            topics=list(exchange.topics),
            verdict="; ".join(exchange.notes) or None,
            started_at_us=exchange.request_time_us or exchange.response_time_us,
        )


@dataclass(slots=True)
class ApiSummary:
    api_key: int | None
    api_name: str | None
    api_version: int | None
    exchanges: int = 0
    outcomes: Counter = field(default_factory=Counter)
    with_errors: int = 0
    """Exchanges whose response carries a non-zero error code."""
    request_bytes: int = 0
    response_bytes: int = 0
    latencies_us: list[int] = field(default_factory=list)

    def latency_percentile(self, fraction: float) -> int | None:
        if not self.latencies_us:
            return None
        ordered = sorted(self.latencies_us)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]

    def as_dict(self) -> dict:
        return {
            "api_key": self.api_key,
            "api_name": self.api_name,
            "api_version": self.api_version,
            "exchanges": self.exchanges,
            "outcomes": dict(sorted(self.outcomes.items())),
            "with_errors": self.with_errors,
            "request_bytes": self.request_bytes,
            "response_bytes": self.response_bytes,
            "latency_us_p50": self.latency_percentile(0.5),
            "latency_us_p99": self.latency_percentile(0.99),
            "latency_us_max": max(self.latencies_us, default=None),
        }


def summarise(exchanges: Iterable[Exchange]) -> list[ApiSummary]:
    """One summary per (API, version), by API key then version; unknown APIs last."""
    groups: dict[tuple, ApiSummary] = {}
    for exchange in exchanges:
        key = (exchange.api_key, exchange.api_version)
        summary = groups.get(key)
        if summary is None:
            summary = groups[key] = ApiSummary(exchange.api_key, exchange.api_name, exchange.api_version)
        summary.exchanges += 1
        summary.outcomes[exchange.outcome] += 1
        summary.with_errors += any(exchange.error_codes)
        summary.request_bytes += exchange.request_bytes or 0
        summary.response_bytes += exchange.response_bytes or 0
        if exchange.latency_us is not None:
            summary.latencies_us.append(exchange.latency_us)

    def order(key: tuple) -> tuple:
        api_key, version = key
        return (api_key is None, api_key or 0, version or 0)

    return [groups[key] for key in sorted(groups, key=order)]
