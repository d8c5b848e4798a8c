"""Which quotas a client request counts against, and how much (``KafkaApis``): Produce counts its request
bytes (``handleProduceRequest``), a consumer's Fetch its response bytes (``handleFetchRequest``; a
follower's fetches are replication, not client traffic) and every request its handling time
(``RequestHandlerHelper.sendResponseMaybeThrottle``). The response carries the largest throttle time
and the connection is muted that long after it is sent (KIP-219)."""

from __future__ import annotations

from ._manager import FETCH, PRODUCE, ClientQuotaManagers

__all__ = ["request_throttle_ms", "set_throttle_time"]

_PRODUCE, _FETCH = 0, 1


def _is_follower(request, version: int) -> bool:
    replica_id = request.replica_state.replica_id if version >= 15 else request.replica_id
    return replica_id >= 0


def request_throttle_ms(
    managers: ClientQuotaManagers,
    quotas,
    ctx,
    request,
    *,
    request_bytes: int,
    response_bytes: int,
    handler_nanos: int,
    now_ms: int,
) -> int:
    """The throttle time of one request from a client connection, its usage recorded."""
    if not len(quotas):  # no quota anywhere: nothing to record (the common case, kept cheap)
        return 0
    user, client_id = ctx.principal.name, ctx.client_id or ""
    throttle = managers.request_time(quotas, user, client_id, handler_nanos, now_ms)
    if ctx.api_key == _PRODUCE:
        throttle = max(throttle, managers.record(quotas, PRODUCE, user, client_id, request_bytes, now_ms))
    elif ctx.api_key == _FETCH and not _is_follower(request, ctx.api_version):
        throttle = max(throttle, managers.record(quotas, FETCH, user, client_id, response_bytes, now_ms))
    return throttle


def set_throttle_time(response, version: int, throttle_ms: int) -> bool:
    """Put the throttle time in a response whose version has the field; False when it has none."""
    field = next((f for f in type(response)._fields_ if f.attr == "throttle_time_ms"), None)
    if field is None or not field.present(version):
        return False
    response.throttle_time_ms = max(response.throttle_time_ms, throttle_ms)
    return True
