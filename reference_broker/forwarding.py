"""Requests a broker passes to the controller (Kafka's ``ForwardingManager``): topic creation and
deletion, new partitions, leader elections and reassignments change the metadata only the controller
writes. The client's whole request goes inside an Envelope; the controller's whole response comes
back inside one and is given to the client as the broker's own answer. The Envelope carries the
client's principal and address, so the controller authorizes the request as the client's; in combined
mode the controller's handler is called in process with the decoded request and the same principal.
A controller that cannot be reached is answered as Kafka's ``ForwardingManager`` answers then: the
request's own error response (``forwarding_errors``) with REQUEST_TIMED_OUT; an Envelope error is
UNKNOWN_SERVER_ERROR to the client, except UNSUPPORTED_VERSION, which closes the client's connection.

A handler that does part of the work itself (AlterConfigs, IncrementalAlterConfigs) forwards what is
left with ``ask_controller``: a new body under the client's header (``forwardRequest(originalRequest,
newRequestBody, ...)``), the controller's answer or ``ForwardingFailed`` with the error code."""

from __future__ import annotations

import ipaddress
import logging

from kconform.codecs import DecodeError
from kconform.codecs.errors import Errors
from kconform.codecs.framing import decode_response, encode_request
from kconform.codecs.messages import EnvelopeRequest

from .dispatch import CloseConnection
from .forwarding_errors import error_message, request_error_response
from .handlers import Handler
from .security.principal_serde import serialize as serialize_principal

__all__ = ["FORWARDED_APIS", "ForwardingFailed", "ask_controller", "broker_handlers", "forwarding_handlers"]

log = logging.getLogger(__name__)
ENVELOPE = 58
# CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders, AlterPartitionReassignments,
# ListPartitionReassignments, forwarded whole (AlterConfigs and IncrementalAlterConfigs are forwarded by
# their own handlers, after the broker's preprocessing: handlers/configs.py)
FORWARDED_APIS = (19, 20, 37, 43, 45, 46)


def _client_address(peer: str) -> bytes:
    host = peer.rsplit(":", 1)[0].strip("[]")
    try:
        return ipaddress.ip_address(host).packed
    except ValueError:
        return b"\x7f\x00\x00\x01"


class ForwardingFailed(Exception):
    """No answer from the controller: ``code`` is what Kafka's ``ForwardingManager`` puts in the error
    response it builds instead (REQUEST_TIMED_OUT, or UNKNOWN_SERVER_ERROR for an envelope error or an
    answer that cannot be read)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"forwarding failed with error {code}")
        self.code = code


async def ask_controller(broker, ctx, request, *, frame: bytes | memoryview | None = None):
    """The controller's answer to ``request`` as if the client had sent it there. ``frame`` is the
    client's own request frame when ``request`` is its body unchanged; otherwise the body is encoded
    under the client's header."""
    local = broker.controller_node
    if local is not None:  # combined mode: the controller is in this process
        return await local.call(
            ctx.api_key, request, version=ctx.api_version, peer=ctx.peer, principal=ctx.principal
        )
    if frame is None:
        frame = encode_request(ctx.api_key, ctx.api_version, ctx.correlation_id, ctx.client_id, request)
    envelope = EnvelopeRequest(
        request_data=bytes(frame),
        request_principal=serialize_principal(ctx.principal),
        client_host_address=_client_address(ctx.peer),
    )
    timeout_s = int(broker.config["request.timeout.ms"]) / 1000
    try:
        answer = await broker.send_to_controller(ENVELOPE, envelope, timeout_s=timeout_s)
    except ConnectionError as exc:
        log.info("forwarding API %d to the controller failed: %s", ctx.api_key, exc)
        raise ForwardingFailed(Errors.REQUEST_TIMED_OUT) from exc
    if answer.error_code == Errors.UNSUPPORTED_VERSION:
        # the controller's versions changed under the connection: the client reconnects and asks again
        raise CloseConnection
    if answer.error_code != Errors.NONE or answer.response_data is None:
        # an Envelope error is a broker misconfiguration, not the client's: Kafka does not pass it on
        log.warning(
            "the controller refused the Envelope for API %d: error %d", ctx.api_key, answer.error_code
        )
        raise ForwardingFailed(Errors.UNKNOWN_SERVER_ERROR)
    try:
        _header, body = decode_response(answer.response_data, ctx.api_key, ctx.api_version)
    except DecodeError as exc:
        log.warning("the controller's answer to API %d cannot be read: %s", ctx.api_key, exc)
        raise ForwardingFailed(Errors.UNKNOWN_SERVER_ERROR) from exc
    return body


async def forward(broker, ctx, request):
    try:
        return await ask_controller(broker, ctx, request, frame=ctx.frame)
    except ForwardingFailed as exc:
        return request_error_response(
            ctx.api_key, ctx.api_version, request, exc.code, error_message(exc.code)
        )


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
