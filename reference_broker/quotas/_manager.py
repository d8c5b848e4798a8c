"""The broker's client quota managers (Kafka's ``ClientQuotaManager`` for produce and fetch bytes,
``ClientRequestQuotaManager`` for request time): one sensor per quota type and metric tags, the limit
looked up in the image's quotas on every record (so an alteration applies at once).

``quota_for`` is ``DefaultQuotaCallback``'s lookup: the first entity that has the key, in the order
/users/<u>/clients/<c>, /users/<u>/clients/<default>, /users/<u>, /users/<default>/clients/<c>,
/users/<default>/clients/<default>, /users/<default>, /clients/<c>, /clients/<default>; the entity found
names the sensor (``quotaMetricTags``), so clients sharing a user quota share its rate."""

from __future__ import annotations

from ..cluster_metadata.client_quotas import CLIENT_ID, USER, ClientQuotas, Entity, entity_of
from ._rate import WindowedRate, throttle_time_ms

__all__ = ["ClientQuotaManagers", "quota_for", "PRODUCE", "FETCH", "REQUEST"]

PRODUCE, FETCH, REQUEST = "producer_byte_rate", "consumer_byte_rate", "request_percentage"
_NANOS_TO_PERCENT = 100.0 / 1e9  # ClientRequestQuotaManager.NanosToPercentagePerSecond


def _candidates(user: str, client_id: str) -> list[tuple[Entity, tuple[str, str]]]:
    """(entity, metric tags (user, client id)) in ``quotaMetricTags``' order of precedence."""
    u, c = ((USER, user),), ((CLIENT_ID, client_id),)
    du, dc = ((USER, None),), ((CLIENT_ID, None),)
    return [
        (entity_of(u + c), (user, client_id)),
        (entity_of(u + dc), (user, client_id)),
        (entity_of(u), (user, "")),
        (entity_of(du + c), (user, client_id)),
        (entity_of(du + dc), (user, client_id)),
        (entity_of(du), (user, "")),
        (entity_of(c), ("", client_id)),
        (entity_of(dc), ("", client_id)),
    ]


def quota_for(
    quotas: ClientQuotas, key: str, user: str, client_id: str
) -> tuple[float, tuple[str, str]] | None:
    """The limit of ``key`` for a principal's user name and client id, with the sensor's tags; None when
    no entity sets it (no quota)."""
    for entity, tags in _candidates(user, client_id or ""):
        value = quotas.value(entity, key)
        if value is not None:
            return value, tags
    return None


class ClientQuotaManagers:
    def __init__(self, samples: int = 11, window_seconds: int = 1) -> None:
        self.samples = samples
        self.window_ms = window_seconds * 1000
        self._sensors: dict[tuple[str, tuple[str, str]], WindowedRate] = {}

    def record(
        self, quotas: ClientQuotas, key: str, user: str, client_id: str, value: float, now_ms: int
    ) -> int:
        """``recordAndGetThrottleTimeMs``: records ``value`` and returns the throttle time (0 with no
        quota). Request time is bounded by one window (``ClientRequestQuotaManager.throttleTime``)."""
        found = quota_for(quotas, key, user, client_id)
        if found is None:
            return 0
        bound, tags = found
        rate = self._sensors.get((key, tags))
        if rate is None:
            rate = self._sensors[(key, tags)] = WindowedRate(self.samples, self.window_ms)
        rate.record(value, now_ms)
        max_ms = self.window_ms if key == REQUEST else None
        return throttle_time_ms(rate, bound, now_ms, max_ms=max_ms)

    def unrecord(
        self, quotas: ClientQuotas, key: str, user: str, client_id: str, value: float, now_ms: int
    ) -> None:
        """``unrecordQuotaSensor``: take back ``value`` (bytes a throttled fetch did not send)."""
        found = quota_for(quotas, key, user, client_id)
        rate = None if found is None else self._sensors.get((key, found[1]))
        if rate is not None:
            rate.record(-value, now_ms)

    def request_time(self, quotas: ClientQuotas, user: str, client_id: str, nanos: int, now_ms: int) -> int:
        """The request-handling share: handler time as a percentage of one second."""
        return self.record(quotas, REQUEST, user, client_id, nanos * _NANOS_TO_PERCENT, now_ms)
