"""Which quotas a client request counts against, and how much (``KafkaApis``): Produce counts its request
bytes (``handleProduceRequest``), a consumer's Fetch its response bytes (``handleFetchRequest``) and every
request its handling time (``RequestHandlerHelper.sendResponseMaybeThrottle``). A follower's Fetch is
replication, answered with ``sendResponseExemptThrottle``: it counts against no client quota at all.

The response carries the largest throttle time and the connection is muted that long from the moment
the throttle is decided (KIP-219), whether or not the response's version has a field to carry it: the
broker never holds a response back (``ClientQuotaManager.throttle`` starts a ``ThrottledChannel`` and the
Processor still sends the pending response: ``KafkaChannel``'s ``MUTED_AND_THROTTLED_AND_RESPONSE_PENDING``
-> ``MUTED_AND_THROTTLED``); ``AbstractResponse.shouldClientThrottle`` only tells the client whether to
wait on its side too."""

from __future__ import annotations

from dataclasses import dataclass

from kconform.codecs import api_schema
from kconform.codecs.framing import encode_response_spliced

from ._manager import FETCH, PRODUCE, ClientQuotaManagers

__all__ = [
    "RequestQuota",
    "fetch_response_size",
    "fetch_throttle_ms",
    "request_throttle_ms",
    "set_throttle_time",
]

_PRODUCE, _FETCH = 0, 1


@dataclass(slots=True)
class RequestQuota:
    """A client request's quota slot, on its request context: when its handler settles the quotas itself
    before answering (a consumer's Fetch, whose throttled answer differs), it puts the throttle time here
    and dispatch only mutes the connection for it instead of recording the request again."""

    started_ns: int
    throttle_ms: int | None = None


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
    if ctx.api_key == _FETCH and _is_follower(request, ctx.api_version):
        return 0
    user, client_id = ctx.principal.name, ctx.client_id or ""
    throttle = managers.request_time(quotas, user, client_id, handler_nanos, now_ms)
    if ctx.api_key == _PRODUCE:
        throttle = max(throttle, managers.record(quotas, PRODUCE, user, client_id, request_bytes, now_ms))
    elif ctx.api_key == _FETCH:
        throttle = max(throttle, managers.record(quotas, FETCH, user, client_id, response_bytes, now_ms))
    return throttle


def fetch_throttle_ms(
    managers: ClientQuotaManagers, quotas, ctx, *, response_bytes: int, handler_nanos: int, now_ms: int
) -> int:
    """A consumer Fetch's throttle time, decided before its answer is built (``handleFetchRequest``):
    the request time and the bytes it would send are recorded; when either quota throttles, the answer
    carries no data, so the bytes are taken back (``unrecordQuotaSensor``)."""
    if not len(quotas):
        return 0
    user, client_id = ctx.principal.name, ctx.client_id or ""
    throttle = max(
        managers.request_time(quotas, user, client_id, handler_nanos, now_ms),
        managers.record(quotas, FETCH, user, client_id, response_bytes, now_ms),
    )
    if throttle > 0:
        managers.unrecord(quotas, FETCH, user, client_id, response_bytes, now_ms)
    return throttle


def fetch_response_size(version: int, response) -> int:
    """What a Fetch response counts against the consumer's byte rate: ``FetchResponse.sizeOf``, the body
    plus 4 bytes (a version 0 response header), records in log files counted without being read."""
    total = encode_response_spliced(_FETCH, version, 0, response)[2]
    header = 4 if api_schema(_FETCH).response_header_version(version) == 0 else 5  # v1: + empty tags
    return total - header + 4


def set_throttle_time(response, version: int, throttle_ms: int) -> bool:
    """Put the throttle time in a response whose version has the field; False when it has none."""
    field = next((f for f in type(response)._fields_ if f.attr == "throttle_time_ms"), None)
    if field is None or not field.present(version):
        return False
    response.throttle_time_ms = max(response.throttle_time_ms, throttle_ms)
    return True
