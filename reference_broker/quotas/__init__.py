"""Client quotas on a broker: the windowed rate and throttle arithmetic (``_rate``), the per-client
sensors with Kafka's quota lookup (``_manager``) and what each request counts (``_requests``)."""

from ._manager import FETCH, PRODUCE, REQUEST, ClientQuotaManagers, quota_for
from ._rate import WindowedRate, throttle_time_ms
from ._requests import (
    RequestQuota,
    fetch_response_size,
    fetch_throttle_ms,
    request_throttle_ms,
    set_throttle_time,
)

__all__ = [
    "FETCH",
    "PRODUCE",
    "REQUEST",
    "ClientQuotaManagers",
    "RequestQuota",
    "WindowedRate",
    "fetch_response_size",
    "fetch_throttle_ms",
    "quota_for",
    "request_throttle_ms",
    "set_throttle_time",
    "throttle_time_ms",
]
