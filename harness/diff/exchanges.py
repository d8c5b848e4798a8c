"""One request to one target and what became of it, for the differential engine: the connections
(``Link``: one per target, and one per classic group member, as a consumer keeps its own connection to
the coordinator), and the exchange itself (``exchange_once``): send, read the answer, decode it leniently,
normalise it. A request that must get no answer is probed for what the target did instead."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from kconform.codecs import DecodeError, api_schema
from kconform.codecs.framing import decode_response_lenient
from kconform.codecs.messages import RequestHeader

from ..client.network import parse_bootstrap
from ..client.raw import RawClient, UnexpectedReply
from ..targets.base import Target
from .normalise import normalise
from .operations import Operation
from .tree import to_tree

__all__ = ["REPLY_TIMEOUT", "Exchange", "Link", "exchange_once"]

REPLY_TIMEOUT = 10.0
_API_VERSIONS = 18


@dataclass(slots=True)
class Exchange:
    target: str
    api_key: int
    api_version: int
    fate: str
    tree: Any = None  # normalised response
    correlation_id: int | None = None
    request_bytes: int = 0
    response_bytes: int = 0
    latency_us: int = 0
    error_codes: list[int] = field(default_factory=list)
    notes: dict = field(default_factory=dict)
    decoded: Any = None  # the answer as decoded, before normalisation: what the next steps learn from


class Link:
    """One raw connection to a target, reopened when the target closes it."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.client: RawClient | None = None

    async def client_for(self) -> RawClient:
        if self.client is None or self.client.closed:
            host, port = parse_bootstrap(self.target.bootstrap)[0]
            self.client = await RawClient.connect(
                host, port, client_id="kconform-diff", timeout=REPLY_TIMEOUT
            )
        return self.client

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()
            self.client = None


@functools.cache
def _header_size(api_key: int, version: int, client_id: str | None) -> int:
    """Bytes of a request header (its correlation id is fixed-size, so any one will do)."""
    header = RequestHeader(
        request_api_key=api_key, request_api_version=version, correlation_id=0, client_id=client_id
    )
    return len(header.encode(api_schema(api_key).request_header_version(version)))


async def exchange_once(
    link: Link,
    op: Operation,
    version: int,
    payload: bytes,
    *,
    prefix: str,
    waiting: Callable[[], AbstractContextManager],
    first_answer: dict,
    sent: asyncio.Event | None = None,
) -> Exchange:
    """Send ``payload`` (the request body, encoded) on ``link`` and return what came back.

    ``waiting()`` times what the targets and the wire take. ``first_answer`` is shared by the two sides
    of one operation: the second side's answer, when it is the same bytes (two brokers that agree), is
    not decoded and normalised again. ``sent`` is set once the request is on the wire."""
    target = link.target.name
    with waiting():  # connecting, when the link has no connection
        client = await link.client_for()
    frame_size = 4 + _header_size(op.api_key, version, client.client_id) + len(payload)
    started = time.perf_counter()
    if not op.expects_response:
        with waiting():
            correlation_id = await client.send_raw(op.api_key, version, payload, expect_response=False)
        fate = await _probe(link, client, waiting)
        # A target that answers such a request may answer it after the probe (a loaded mock does):
        # a fresh connection keeps that late answer from being taken for the next request's.
        await link.close()
        return Exchange(target, op.api_key, version, fate, None, correlation_id, frame_size)
    with waiting():  # the socket write is the wire's time, not the harness's
        await client.send_raw(op.api_key, version, payload)  # kept raw: decoded leniently below
    if sent is not None:
        sent.set()
    try:
        with waiting():
            reply = await client.receive(REPLY_TIMEOUT)
    except Exception:  # noqa: BLE001 - an answer out of order is an outcome too
        await link.close()
        return Exchange(target, op.api_key, version, "undecodable", None, request_bytes=frame_size)
    latency = int((time.perf_counter() - started) * 1e6)
    if not reply.answered:
        await link.close()  # a silent or closed connection cannot be reused in order
        return Exchange(
            target, op.api_key, version, str(reply.fate), None, reply.correlation_id, frame_size, 0, latency
        )
    after_id = bytes(reply.frame[4:])  # correlation ids are each connection's own
    known = first_answer.get("answer")
    if known is not None and known[0] == after_id:
        _, decoded, tree, codes = known
    else:
        try:
            _, decoded, rest = decode_response_lenient(reply.frame, op.api_key, version)
        except DecodeError as exc:
            await link.close()
            return Exchange(
                target,
                op.api_key,
                version,
                "undecodable",
                None,
                reply.correlation_id,
                frame_size,
                len(reply.frame) + 4,
                latency,
                notes={"decode_error": str(exc)},
            )
        tree = _own_tree(op, version, to_tree(decoded), prefix)
        if rest:  # bytes after the message: Kafka's parsers ignore them, a conformance check does not
            tree["<trailing bytes>"] = len(rest)
        codes = _error_codes(tree)
        first_answer["answer"] = (after_id, decoded, tree, codes)
    return Exchange(
        target,
        op.api_key,
        version,
        str(reply.fate),
        tree,
        reply.correlation_id,
        frame_size,
        len(reply.frame) + 4,
        latency,
        codes,
        decoded=decoded,
    )


def _own_tree(op: Operation, version: int, tree: dict, prefix: str) -> dict:
    """The answer normalised, and where it lists everything the broker has, only this case's own."""
    listed = op.own_entries(version)
    if listed is not None:
        path, key = listed
        tree[path] = [e for e in tree.get(path) or [] if (e.get(key) or "").startswith(f"{prefix}-")]
    return normalise(op.api_key, tree)


async def _probe(link: Link, client: RawClient, waiting) -> str:
    """After a request that must get no answer (Produce with acks=0), what did the target do? An
    ApiVersions v0 probe tells, in order: its own answer ("no_response", as Kafka), an answer to the
    earlier request first ("answered"), or a closed connection ("closed", what Kafka does when an
    acks=0 produce fails)."""
    await client.send_raw(_API_VERSIONS, 0, b"")
    try:
        with waiting():
            reply = await client.receive(REPLY_TIMEOUT)
    except UnexpectedReply:
        await link.close()
        return "answered"
    if not reply.answered:
        await link.close()
        return str(reply.fate)
    return "no_response"


def _error_codes(tree: Any) -> list[int]:
    out: list[int] = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key.endswith("error_code") and isinstance(value, int):
                    out.append(value)
                elif isinstance(value, dict | list):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(tree)
    return out
