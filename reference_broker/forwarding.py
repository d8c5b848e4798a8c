"""Requests a broker passes to the controller (Kafka's ``ForwardingManager``): topic creation and
deletion, new partitions, leader elections and reassignments change the metadata only the controller
writes. The client's whole request goes inside an Envelope; the controller's whole response comes
back inside one and is given to the client as the broker's own answer. In combined mode the
controller's handler is called in process with the decoded request. A controller that cannot be
reached is answered as Kafka's broker answers then: the request's own error response with
REQUEST_TIMED_OUT where the response has a place for it."""

from __future__ import annotations

import ipaddress
import logging

from kconform.codecs import DecodeError
from kconform.codecs.errors import Errors
from kconform.codecs.framing import decode_response
from kconform.codecs.messages import EnvelopeRequest

from .handlers import Handler

__all__ = ["FORWARDED_APIS", "broker_handlers", "forwarding_handlers"]

log = logging.getLogger(__name__)
ENVELOPE = 58
# CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders, AlterPartitionReassignments,
# ListPartitionReassignments
FORWARDED_APIS = (19, 20, 37, 43, 45, 46)


def _client_address(peer: str) -> bytes:
    host = peer.rsplit(":", 1)[0].strip("[]")
    try:
        return ipaddress.ip_address(host).packed
    except ValueError:
        return b"\x7f\x00\x00\x01"


async def forward(broker, ctx, request):
    local = broker.controller_node
    if local is not None:  # combined mode: the controller is in this process
        return await local.call(ctx.api_key, request, version=ctx.api_version, peer=ctx.peer)
    envelope = EnvelopeRequest(
        request_data=bytes(ctx.frame), request_principal=b"", client_host_address=_client_address(ctx.peer)
    )
    timeout_s = int(broker.config["request.timeout.ms"]) / 1000
    try:
        answer = await broker.send_to_controller(ENVELOPE, envelope, timeout_s=timeout_s)
    except ConnectionError as exc:
        log.info("forwarding API %d to the controller failed: %s", ctx.api_key, exc)
        return _error(ctx, Errors.REQUEST_TIMED_OUT)
    if answer.error_code != Errors.NONE or answer.response_data is None:
        return _error(ctx, answer.error_code or Errors.UNKNOWN_SERVER_ERROR)
    try:
        _header, body = decode_response(answer.response_data, ctx.api_key, ctx.api_version)
    except DecodeError as exc:
        log.warning("the controller's answer to API %d cannot be read: %s", ctx.api_key, exc)
        return _error(ctx, Errors.UNKNOWN_SERVER_ERROR)
    return body


def _error(ctx, code: int):
    from kconform.codecs import api_schema

    response = api_schema(ctx.api_key).response()
    if hasattr(response, "error_code"):
        response.error_code = code
    return response


def broker_handlers() -> dict[int, Handler]:
    """Every API a broker serves: its own handlers and the ones the controller answers for it."""
    from .handlers import registered_handlers

    return forwarding_handlers(registered_handlers())


def forwarding_handlers(handlers: dict[int, Handler]) -> dict[int, Handler]:
    """The broker's handler table with the forwarded APIs answered by the controller."""
    from .controller.handlers import CONTROLLER_HANDLERS

    table = dict(handlers)
    for key in FORWARDED_APIS:
        theirs = CONTROLLER_HANDLERS[key]
        table[key] = Handler(key, forward, theirs.min_version, theirs.max_version)
    return table
