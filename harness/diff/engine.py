"""Runs a case (a list of operations) against two targets, one request at a time to each, and compares
the answers: normalised, then field by field. Every exchange can go to the traces.

Requests go over raw connections (the reference client's raw mode), so what the targets get is exactly
what the operation built, at the version chosen for it, and a target that closes the connection or
stays silent is an outcome like any other."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from dataclasses import dataclass, field
from typing import Any

from kconform.codecs import DecodeError, EncodeError, api_schema
from kconform.codecs.framing import decode_response_lenient
from kconform.codecs.messages import FindCoordinatorRequest, MetadataRequest, RequestHeader
from kconform.traces import TraceRow, TraceWriter

from ..client.network import parse_bootstrap
from ..client.raw import Fate, RawClient, UnexpectedReply
from ..targets.base import Target, common_versions
from .causes import Sighting, error_beside, sightings
from .compare import Difference, diff_trees, signature
from .configuration import probe_configuration
from .normalise import normalise
from .operations import Context, CreateTopic, Operation
from .tree import to_tree

__all__ = ["CaseResult", "DiffEngine", "Exchange"]

_REPLY_TIMEOUT = 10.0
_METADATA, _METADATA_WITH_IDS = 3, 10  # Metadata gives topic ids from v10 (KIP-516)
_API_VERSIONS = 18
_FIND_COORDINATOR = 10
_NOT_YET = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR: ask again
_WARM_UP_TRIES = 40  # FindCoordinator asks, 0.25 s apart, for a target's internal topics to come up


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


@dataclass(slots=True)
class Divergence:
    op_index: int
    signature: str
    difference: Difference


@dataclass(slots=True)
class CaseResult:
    case_id: str
    ops: list[Operation]
    exchanges: list[tuple[Exchange, Exchange]] = field(default_factory=list)
    divergences: list[Divergence] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (op index, why)
    sightings: list[tuple[int, int, Sighting]] = field(default_factory=list)  # (op index, version, cause)

    @property
    def cause_ids(self) -> set[str]:
        return {s.key for _, _, s in self.sightings}

    @property
    def signatures(self) -> set[str]:
        return {d.signature for d in self.divergences}


class _Link:
    """One raw connection to a target, reopened when the target closes it."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.client: RawClient | None = None

    async def client_for(self) -> RawClient:
        if self.client is None or self.client.closed:
            host, port = parse_bootstrap(self.target.bootstrap)[0]
            self.client = await RawClient.connect(
                host, port, client_id="kconform-diff", timeout=_REPLY_TIMEOUT
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


class DiffEngine:
    def __init__(self, a: Target, b: Target, *, traces: TraceWriter | None = None) -> None:
        self.a, self.b = a, b
        self.traces = traces
        self.shared, self.skipped_pairs = common_versions(a.api_versions(), b.api_versions())
        self._links = (_Link(a), _Link(b))
        self.operations_run = 0
        self.crashes: list[tuple[str, int, int, str]] = []  # (target, api key, version, its last words)
        self._prefix = ""
        self.waiting_seconds = 0.0  # time spent waiting for the targets' answers
        self.pairs_compared = 0
        self._warm = False
        self.configuration: dict[str, dict] = {}  # target name -> what its configuration decides
        # The first side's answer to the operation in hand, kept so that the second side's answer, when
        # it is the same bytes (two brokers that agree), is not decoded and normalised a second time.
        self._first_answer: tuple[bytes, Any, Any, list[int]] | None = None

    def version_range(self, api_key: int) -> tuple[int, int] | None:
        shared = self.shared.get(api_key)
        if shared is None:
            return None
        schema = api_schema(api_key)
        low, high = max(shared[0], schema.min_version), min(shared[1], schema.max_version)
        return (low, high) if low <= high else None

    async def prepare(self) -> None:
        """Bring the targets' coordinators up and read their configuration, once (and again after a
        target restarts); the first case does it when nothing did before."""
        if not self._warm:
            await self._warm_up()
            await self._read_configuration()
            self._warm = True

    async def run_case(
        self, ops: list[Operation], case_id: str, namespace: str | None = None, *, until: str | None = None
    ) -> CaseResult:
        """Run ``ops`` in order on both targets. Names (topics, groups) start with ``namespace`` (the
        case id by default): a namespace is used once, so no case meets another's topics or groups.
        With ``until`` (a cause id), stop once that cause shows: a replay asking whether it shows needs
        nothing after it."""
        await self.prepare()
        ctx = Context(prefix=namespace or case_id)
        self._prefix = ctx.prefix
        result = CaseResult(case_id, list(ops))
        for index, op in enumerate(ops):
            shape = op.shape(ctx)
            span = self.version_range(op.api_key)
            if span is None:
                if isinstance(op, CreateTopic) and op.partitions > 0:
                    # Setting up, not comparing: create the topic however each target allows (the mock
                    # cluster has no CreateTopics), so the steps after it meet the same topics.
                    await self._create_by_side_door(op, ctx)
                    ctx.created.setdefault(op.topic, op.partitions)
                result.skipped.append(
                    (index, f"{api_schema(op.api_key).name} has no version both targets offer")
                )
                continue
            low, high = max(span[0], op.min_version), min(span[1], op.max_version)
            if low > high:
                result.skipped.append(
                    (
                        index,
                        f"{api_schema(op.api_key).name} v{span[0]}-{span[1]} offered, "
                        f"the operation needs v{op.min_version}-{op.max_version}",
                    )
                )
                continue
            version = op.version(low, high)
            if op.names_topics_by_id(version):
                await self._learn_topic_ids(ctx, op.topics(ctx))
            # Most operations build one request for both; a step that carries ids each target gave
            # out (a member id, a topic id) builds one per side.
            per_side = getattr(op, "body_for", None)
            bodies = (
                [per_side(side, ctx, version) for side in "ab"] if per_side else [op.body(ctx, version)] * 2
            )
            try:  # encoded once here: the exchange sends these bytes
                payloads = [body.encode(version) for body in bodies]
            except EncodeError as exc:
                result.skipped.append((index, f"not expressible at v{version}: {exc}"))
                continue
            pair = []
            self._first_answer = None
            for link, body, payload in zip(self._links, bodies, payloads, strict=True):
                pair.append(await self._exchange(link, op, version, body, payload))
            self.operations_run += 1
            self.pairs_compared += 1
            exchange_a, exchange_b = pair
            for side, exchange in zip("ab", pair, strict=True):
                if exchange.decoded is not None:  # ids this side gave out, for the steps after this one
                    op.learn(side, ctx, exchange.decoded)
            result.exchanges.append((exchange_a, exchange_b))
            name = api_schema(op.api_key).name
            found = []
            if exchange_a.fate != exchange_b.fate:
                found.append(Difference("<connection>", "fate", exchange_a.fate, exchange_b.fate))
            elif exchange_a.fate == Fate.ANSWERED:
                found = diff_trees(exchange_a.tree, exchange_b.tree)
            for difference in found:
                result.divergences.append(Divergence(index, signature(name, version, difference), difference))
            tree_a, tree_b = exchange_a.tree, exchange_b.tree

            def agreed_error(path: str, tree_a=tree_a, tree_b=tree_b) -> int:
                code = error_beside(tree_a, path)
                return code if code == error_beside(tree_b, path) else 0

            result.sightings += [(index, version, s) for s in sightings(name, shape, found, agreed_error)]
            if isinstance(op, CreateTopic) and (op.partitions > 0 or op.partitions == -1):
                ctx.created.setdefault(op.topic, op.partitions if op.partitions > 0 else None)
            self._trace(case_id, op, ctx, pair, found, name, version)
            if until is not None and until in result.cause_ids:
                break
        return result

    async def _exchange(self, link: _Link, op: Operation, version: int, body, payload: bytes) -> Exchange:
        try:
            exchange = await self._exchange_once(link, op, version, body, payload)
        except (OSError, TimeoutError):  # could not even connect
            exchange = Exchange(link.target.name, op.api_key, version, "closed", None)
        if exchange.fate in ("closed", "timeout", "undecodable", "answered") and not link.target.alive():
            # The target died on this request: that is the outcome. Bring it back for the next one.
            exchange.fate = "crashed"
            exchange.notes["crash"] = link.target.crash_report()
            self.crashes.append((link.target.name, op.api_key, version, exchange.notes["crash"]))
            await link.close()
            await asyncio.to_thread(link.target.restart)  # a restart waits on the target: off the loop
            self._warm = False  # it came back empty: the next case brings its coordinators up again
        return exchange

    async def _exchange_once(
        self, link: _Link, op: Operation, version: int, body, payload: bytes
    ) -> Exchange:
        with self._waiting():  # connecting, when the link has no connection
            client = await link.client_for()
        frame_size = 4 + _header_size(op.api_key, version, client.client_id) + len(payload)
        started = time.perf_counter()
        if not op.expects_response:
            correlation_id = await client.send(op.api_key, version, body, expect_response=False)
            fate = await self._probe(link, client)
            # A target that answers such a request may answer it after the probe (a loaded mock does):
            # a fresh connection keeps that late answer from being taken for the next request's.
            await link.close()
            return Exchange(link.target.name, op.api_key, version, fate, None, correlation_id, frame_size)
        with self._waiting():  # the socket write is the wire's time, not the harness's
            await client.send_raw(op.api_key, version, payload)  # kept raw: decoded leniently below
        try:
            reply = await self._receive(client)
        except Exception:  # noqa: BLE001 - an answer out of order is an outcome too
            await link.close()
            return Exchange(
                link.target.name, op.api_key, version, "undecodable", None, request_bytes=frame_size
            )
        latency = int((time.perf_counter() - started) * 1e6)
        if not reply.answered:
            await link.close()  # a silent or closed connection cannot be reused in order
            return Exchange(
                link.target.name,
                op.api_key,
                version,
                str(reply.fate),
                None,
                reply.correlation_id,
                frame_size,
                0,
                latency,
            )
        after_id = bytes(reply.frame[4:])  # correlation ids are each connection's own
        first = self._first_answer
        if first is not None and first[0] == after_id:
            _, decoded, tree, codes = first
            return self._answered(link, op, version, reply, frame_size, latency, decoded, tree, codes)
        try:
            _, decoded, rest = decode_response_lenient(reply.frame, op.api_key, version)
        except DecodeError as exc:
            await link.close()
            return Exchange(
                link.target.name,
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
        tree = to_tree(decoded)
        listed = op.own_entries(version)
        if listed is not None:  # an answer listing everything the broker has: only this case's own
            path, key = listed
            prefix = f"{self._prefix}-"
            tree[path] = [e for e in tree.get(path) or [] if (e.get(key) or "").startswith(prefix)]
        tree = normalise(op.api_key, tree)
        if rest:  # bytes after the message: Kafka's parsers ignore them, a conformance check does not
            tree["<trailing bytes>"] = len(rest)
        codes = _error_codes(tree)
        self._first_answer = (after_id, decoded, tree, codes)
        return self._answered(link, op, version, reply, frame_size, latency, decoded, tree, codes)

    def _answered(self, link, op, version, reply, frame_size, latency, decoded, tree, codes) -> Exchange:
        return Exchange(
            link.target.name,
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

    async def _warm_up(self) -> None:
        """Bring each target's group and transaction coordinators up before the first case, as a
        running cluster has them: a broker creates __consumer_offsets and __transaction_state on the
        first FindCoordinator for each, answering COORDINATOR_NOT_AVAILABLE (or NOT_COORDINATOR from
        the coordinators) until they are loaded. Without this the run's first cases meet a state no
        later case, and no replay, meets again."""
        span = self.version_range(_FIND_COORDINATOR)
        if span is None:
            return
        version = min(span[1], 3) if span[0] <= 3 else span[1]
        key_types = (0, 1) if version >= 1 else (0,)
        for link in self._links:
            for key_type in key_types:
                if version >= 4:
                    request = FindCoordinatorRequest(key_type=key_type, coordinator_keys=["kconform-warm-up"])
                else:
                    request = FindCoordinatorRequest(key="kconform-warm-up", key_type=key_type)
                for _ in range(_WARM_UP_TRIES):
                    try:
                        answer = await self._call(link, _FIND_COORDINATOR, version, request)
                    except Exception:  # noqa: BLE001 - a target that cannot: its cases will show it
                        await link.close()
                        break
                    errors = {answer.error_code} | {c.error_code for c in answer.coordinators or []}
                    errors.discard(0)
                    if not errors or errors - _NOT_YET:  # ready, or refused for good
                        break
                    with self._waiting():
                        await asyncio.sleep(0.25)

    async def _read_configuration(self) -> None:
        """What each target's configuration decides (topic auto-creation, default partitions), read
        once with a probe topic outside every case's namespace."""
        span = self.version_range(_METADATA)
        if span is None or span[1] < 4:  # allow_auto_topic_creation is a field from v4
            return
        for link in self._links:
            try:
                with self._waiting():
                    client = await link.client_for()
                    self.configuration[link.target.name] = await probe_configuration(
                        client.call, min(span[1], 8), "kconform-probe-configuration"
                    )  # v8 at most: some targets add a stray byte after later versions' answers
            except Exception:  # noqa: BLE001 - not known: its cases will show what the target does
                await link.close()

    async def _learn_topic_ids(self, ctx: Context, topics: list[str]) -> None:
        """Each side's ids for ``topics``, from that side's Metadata (asked at the newest version both
        sides offer, v10 at least; neither traced nor compared). A topic a side does
        not know keeps the zero id, so the request then names an unknown topic on that side."""
        span = self.version_range(_METADATA)
        if span is None or span[1] < _METADATA_WITH_IDS:
            return
        version = span[1]
        for side, link in zip("ab", self._links, strict=True):
            request = MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name=name) for name in topics],
                allow_auto_topic_creation=False,
            )
            try:
                answer = await self._call(link, _METADATA, version, request)
            except Exception:  # noqa: BLE001 - no ids: the exchange that follows shows what is wrong
                continue
            for topic in answer.topics:
                if topic.name is not None:
                    ctx.ids[(side, topic.name)] = topic.topic_id

    async def _create_by_side_door(self, op: CreateTopic, ctx: Context) -> None:
        for target in (self.a, self.b):
            try:  # Target.create_topic runs its own event loop: give it a thread
                with self._waiting():
                    await asyncio.to_thread(target.create_topic, ctx.topic(op.topic), op.partitions)
            except Exception:  # noqa: BLE001 - an existing topic, or a refusal: the steps after it will tell
                pass

    async def _call(self, link: _Link, api_key: int, version: int, request):
        """A request of the engine's own (set-up, not compared), on the link's connection."""
        with self._waiting():
            client = await link.client_for()
            return await client.call(api_key, version, request)

    async def _receive(self, client: RawClient):
        with self._waiting():
            return await client.receive(_REPLY_TIMEOUT)

    @contextlib.contextmanager
    def _waiting(self):
        """Time spent on the targets and the wire (sending, answers, connections, set-up), not the
        harness's own."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.waiting_seconds += time.perf_counter() - started

    async def _probe(self, link: _Link, client: RawClient) -> str:
        """After a request that must get no answer (Produce with acks=0), what did the target do? An
        ApiVersions v0 probe tells, in order: its own answer ("no_response", as Kafka), an answer to
        the earlier request first ("answered"), or a closed connection ("closed", what Kafka does when
        an acks=0 produce fails)."""
        await client.send_raw(_API_VERSIONS, 0, b"")
        try:
            reply = await self._receive(client)
        except UnexpectedReply:
            await link.close()
            return "answered"
        if not reply.answered:
            await link.close()
            return str(reply.fate)
        return "no_response"

    def _trace(self, case_id, op, ctx, pair, found, name, version) -> None:
        if self.traces is None:
            return
        # one signature a differing field, first seen first: several partitions differing in one
        # field are one signature (paths are generic)
        sigs = list(dict.fromkeys(signature(name, version, d) for d in found))
        # The outcome is the judgement: two targets that answer alike pass, whether the answer holds
        # an error code (kept in error_codes) or is a closed connection; the grid's rate is agreement.
        outcome = "diverge" if found else "pass"
        for exchange in pair:
            self.traces.append(
                TraceRow(
                    target=exchange.target,
                    api_key=op.api_key,
                    api_version=version,
                    outcome=outcome,
                    case_id=case_id,
                    api_name=name,
                    correlation_id=exchange.correlation_id,
                    request_bytes=exchange.request_bytes,
                    response_bytes=exchange.response_bytes,
                    latency_us=exchange.latency_us,
                    error_codes=exchange.error_codes,
                    signature=sigs[0] if sigs else None,
                    signatures=sigs,
                    topics=op.topics(ctx),
                )
            )

    async def close(self) -> None:
        for link in self._links:
            await link.close()


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
