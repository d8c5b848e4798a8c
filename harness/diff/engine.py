"""Runs a case (a list of operations) against two targets and compares the answers: normalised, then
field by field. Every exchange can go to the traces.

Requests go over raw connections (the reference client's raw mode), so what the targets get is exactly
what the operation built, at the version chosen for it, and a target that closes the connection or
stays silent is an outcome like any other.

One request at a time goes to each target, except where a broker holds a request until another one
comes: a classic group's JoinGroup waits for the other members to rejoin, a follower's SyncGroup for the
leader's. Such an operation says so (``may_wait``): it is sent on its member's own connection and its
answer is read after the next operation's, or before that member's next request, which is what two
consumers of one group do."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from collections.abc import Hashable
from dataclasses import dataclass, field

from kconform.codecs import EncodeError, api_schema
from kconform.codecs.messages import FindCoordinatorRequest, MetadataRequest
from kconform.traces import TraceRow, TraceWriter

from ..targets.base import Target, common_versions
from .causes import Sighting, error_beside, sightings
from .compare import Difference, diff_trees, signature
from .configuration import probe_configuration
from .context import Context
from .exchanges import Exchange, Link, exchange_once
from .operations import CreateTopic, Operation

__all__ = ["CaseResult", "DiffEngine", "Exchange"]

_METADATA, _METADATA_WITH_IDS = 3, 10  # Metadata gives topic ids from v10 (KIP-516)
_FIND_COORDINATOR = 10
_NOT_YET = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR: ask again
_WARM_UP_TRIES = 40  # FindCoordinator asks, 0.25 s apart, for a target's internal topics to come up
_ANSWERED = "answered"
_HOLD_GRACE_S = 0.1  # how long a request a broker may hold is given before the next step goes


@dataclass(slots=True)
class Divergence:
    op_index: int
    signature: str
    difference: Difference


@dataclass(slots=True)
class CaseResult:
    case_id: str
    ops: list[Operation]
    exchanges: list[tuple[Exchange, Exchange]] = field(default_factory=list)  # in the order compared
    exchanged_ops: list[int] = field(default_factory=list)  # the operation of each of ``exchanges``
    divergences: list[Divergence] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (op index, why)
    sightings: list[tuple[int, int, Sighting]] = field(default_factory=list)  # (op index, version, cause)

    @property
    def cause_ids(self) -> set[str]:
        return {s.key for _, _, s in self.sightings}

    @property
    def signatures(self) -> set[str]:
        return {d.signature for d in self.divergences}


@dataclass(slots=True)
class _Restarts:
    count: int = 0


@dataclass(slots=True)
class _InFlight:
    """An operation sent to both targets whose answers are not compared yet."""

    index: int
    op: Operation
    version: int
    shape: str
    channel: Hashable | None
    answers: list  # per side: a task giving its Exchange
    alongside: list = field(default_factory=list)  # operations still unanswered when this one was sent


class DiffEngine:
    def __init__(self, a: Target, b: Target, *, traces: TraceWriter | None = None) -> None:
        self.a, self.b = a, b
        self.traces = traces
        # what each side advertises, as read when the run began (the report grids every pair of either)
        self.advertised = {a.name: a.api_versions(), b.name: b.api_versions()}
        self.shared, self.skipped_pairs = common_versions(self.advertised[a.name], self.advertised[b.name])
        self._links = (Link(a), Link(b))
        self._member_links: dict[tuple[int, Hashable], Link] = {}  # (side, channel) -> its connection
        self.operations_run = 0
        self.crashes: list[tuple[str, int, int, str]] = []  # (target, api key, version, its last words)
        self._prefix = ""
        self.waiting_seconds = 0.0  # time spent waiting for the targets' answers (overlaps once)
        self._waits, self._wait_started = 0, 0.0
        self.pairs_compared = 0
        self._restarts = _Restarts()  # shared with lanes: one count for the targets
        self._warmed_at: int | None = None  # the restart count when this engine last warmed up
        self.configuration: dict[str, dict] = {}  # target name -> what its configuration decides
        self._restarting = {a.name: asyncio.Lock(), b.name: asyncio.Lock()}

    def lane(self) -> DiffEngine:
        """Another engine on the same targets with connections of its own, so that replays (each in a
        namespace of its own) run side by side. It shares what belongs to the targets: the versions,
        the configuration read, the crashes seen, the lock that lets one restart happen at a time,
        and the count of restarts. It traces nothing."""
        other = copy.copy(self)
        other._links = (Link(self.a), Link(self.b))
        other._member_links = {}
        other.traces = None
        other.operations_run = other.pairs_compared = 0
        other.waiting_seconds, other._waits, other._wait_started = 0.0, 0, 0.0
        return other

    @property
    def restarts(self) -> int:
        """How often a target crashed or came back: a replay during which this moved met it."""
        return self._restarts.count

    def step_text(self, op) -> str:
        """``op`` as a reader wants it, at the version it is sent at between these two targets (the
        version it would be sent at when both offer none it can take)."""
        span = self.version_range(op.api_key)
        if span is None:
            return op.describe(op.version_pick) + " (no version both targets offer)"
        low, high = max(span[0], op.min_version), min(span[1], op.max_version)
        if low > high:
            return op.describe(op.version_pick) + " (no version both targets offer that it can take)"
        return op.describe(op.version(low, high))

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
        if self._warmed_at != self._restarts.count:
            self._warmed_at = self._restarts.count
            await self._warm_up()
            await self._read_configuration()

    async def run_case(
        self,
        ops: list[Operation],
        case_id: str,
        namespace: str | None = None,
        *,
        until: str | None = None,
        prepare: bool = True,
    ) -> CaseResult:
        """Run ``ops`` in order on both targets. Names (topics, groups) start with ``namespace`` (the
        case id by default): a namespace is used once, so no case meets another's topics or groups.
        With ``until`` (a cause id), stop once that cause shows: a replay asking whether it shows needs
        nothing after it. ``prepare=False`` meets the targets as they are, coordinators not brought up."""
        if prepare:
            await self.prepare()
        ctx = Context(prefix=namespace or case_id)
        self._prefix = ctx.prefix
        result = CaseResult(case_id, list(ops))
        held: list[_InFlight] = []  # sent, answers read after the next operation's
        try:
            for index, op in enumerate(ops):
                channel = op.channel(ctx)
                for earlier in [h for h in held if h.channel == channel]:  # answered first on it
                    held.remove(earlier)
                    if await self._compare(result, ctx, earlier, until):
                        return result
                flight = await self._send(result, ctx, index, op, channel)
                if flight is None:
                    continue
                flight.alongside = [h.op for h in held]
                if op.may_wait(ctx):
                    held.append(flight)
                    continue
                earlier_ones, held = held, []
                for ready in (flight, *earlier_ones):
                    if await self._compare(result, ctx, ready, until):
                        return result
            for earlier in held:
                if await self._compare(result, ctx, earlier, until):
                    return result
            held = []
        finally:
            for flight in held:  # a replay that stopped early: nothing reads these answers
                for task in flight.answers:
                    task.cancel()
                await asyncio.gather(*flight.answers, return_exceptions=True)
            await self._close_member_links()
        return result

    async def _send(self, result, ctx, index, op, channel) -> _InFlight | None:
        """Send ``op`` to both targets (side a's request first, and on the wire before side b's), or
        record why it cannot be sent."""
        shape = op.shape(ctx)
        span = self.version_range(op.api_key)
        if span is None:
            if isinstance(op, CreateTopic) and op.partitions > 0:
                # Setting up, not comparing: create the topic however each target allows (the mock
                # cluster has no CreateTopics), so the steps after it meet the same topics.
                await self._create_by_side_door(op, ctx)
                ctx.created.setdefault(op.topic, op.partitions)
            result.skipped.append((index, f"{api_schema(op.api_key).name} has no version both targets offer"))
            return None
        low, high = max(span[0], op.min_version), min(span[1], op.max_version)
        if low > high:
            name = api_schema(op.api_key).name
            needs = f"v{op.min_version}-{op.max_version}"
            why = f"{name} v{span[0]}-{span[1]} offered, the operation needs {needs}"
            result.skipped.append((index, why))
            return None
        version = op.version(low, high)
        if op.names_topics_by_id(version):
            await self._learn_topic_ids(ctx, op.topics(ctx))
        # Most operations build one request for both; a step that carries ids each target gave out
        # (a member id, a topic id) builds one per side.
        per_side = getattr(op, "body_for", None)
        bodies = [per_side(side, ctx, version) for side in "ab"] if per_side else [op.body(ctx, version)] * 2
        try:  # encoded once here: the exchange sends these bytes
            payloads = [body.encode(version) for body in bodies]
        except EncodeError as exc:
            result.skipped.append((index, f"not expressible at v{version}: {exc}"))
            return None
        first_answer: dict = {}
        answers = []
        for side, payload in enumerate(payloads):
            link = self._link(side, channel)
            sent = asyncio.Event()
            task = asyncio.ensure_future(self._exchange(link, op, version, payload, first_answer, sent))
            await sent.wait()  # in order: side a's request, then side b's, then the next operation's
            answers.append(task)
        # Both targets work on the request at once: each meets the case's steps at the same pace (a
        # target that holds a request does not age the other's sessions), and the wait is one. A
        # request a broker may hold gets a moment: a target that answers it at once (a follower's sync
        # answered before the leader's came) then does so before the next step, every time.
        await asyncio.wait(answers, timeout=_HOLD_GRACE_S if op.may_wait(ctx) else None)
        ctx.sent.append((index, op))
        return _InFlight(index, op, version, shape, channel, answers)

    async def _compare(self, result: CaseResult, ctx: Context, flight: _InFlight, until: str | None) -> bool:
        """Read both answers of ``flight``, let the operation learn from them, compare them and record
        what differs. True when ``until`` (a cause id) showed."""
        index, op, version = flight.index, flight.op, flight.version
        pair = [await task for task in flight.answers]
        self.operations_run += 1
        self.pairs_compared += 1
        exchange_a, exchange_b = pair
        for side, exchange in zip("ab", pair, strict=True):
            if exchange.decoded is not None:  # ids this side gave out, for the steps after this one
                op.learn(side, ctx, exchange.decoded)
        op.ran(ctx)
        result.exchanges.append((exchange_a, exchange_b))
        result.exchanged_ops.append(index)
        name = api_schema(op.api_key).name
        found = []
        if exchange_a.fate != exchange_b.fate:
            found.append(Difference("<connection>", "fate", exchange_a.fate, exchange_b.fate))
        elif exchange_a.fate == _ANSWERED:
            found = diff_trees(exchange_a.tree, exchange_b.tree)
        for difference in found:
            result.divergences.append(Divergence(index, signature(name, version, difference), difference))
        tree_a, tree_b = exchange_a.tree, exchange_b.tree

        def agreed_error(path: str) -> int:
            code = error_beside(tree_a, path)
            return code if code == error_beside(tree_b, path) else 0

        # what happened while the request was held (who else joined) completes its shape
        alongside = flight.alongside + [later for i, later in ctx.sent if i > index]
        shape = _with_parts(flight.shape, op.answered_parts(ctx, flight.shape, alongside))
        shown = sightings(name, shape, found, agreed_error, answer_due=op.expects_response)
        result.sightings += [(index, version, s) for s in shown]
        if isinstance(op, CreateTopic) and (op.partitions > 0 or op.partitions == -1):
            ctx.created.setdefault(op.topic, op.partitions if op.partitions > 0 else None)
        ctx.auto_created.update(op.creates(version))
        written, member = op.writes(ctx), op.membership()
        if (written or member is not None) and _write_outcome(exchange_a) != _write_outcome(exchange_b):
            ctx.diverged.update(written)
            if member is not None:
                ctx.diverged_members.add(member)
        ctx.crashed.update(side for side, e in zip("ab", pair, strict=True) if e.fate == "crashed")
        self._trace(result.case_id, op, ctx, pair, found, name, version)
        return until is not None and until in result.cause_ids

    def _link(self, side: int, channel: Hashable | None) -> Link:
        if channel is None:
            return self._links[side]
        link = self._member_links.get((side, channel))
        if link is None:
            link = self._member_links[(side, channel)] = Link(self._links[side].target)
        return link

    async def _close_member_links(self) -> None:
        links, self._member_links = list(self._member_links.values()), {}
        for link in links:
            await link.close()

    async def _exchange(
        self, link: Link, op: Operation, version: int, payload: bytes, first_answer: dict, sent: asyncio.Event
    ) -> Exchange:
        try:
            exchange = await exchange_once(
                link,
                op,
                version,
                payload,
                prefix=self._prefix,
                waiting=self._waiting,
                first_answer=first_answer,
                sent=sent,
            )
        except (OSError, TimeoutError):  # could not even connect
            exchange = Exchange(link.target.name, op.api_key, version, "closed", None)
        finally:
            sent.set()
        target = link.target
        if exchange.fate in ("closed", "timeout", "undecodable", _ANSWERED) and not target.alive():
            async with self._restarting[target.name]:  # two answers in flight may both meet the end
                if not target.alive():
                    # The target died on this request: that is the outcome. Bring it back.
                    exchange.fate = "crashed"
                    self._restarts.count += 1  # replays beside this one met the crash too
                    exchange.notes["crash"] = target.crash_report()
                    self.crashes.append((target.name, op.api_key, version, exchange.notes["crash"]))
                    for other in (*self._links, *self._member_links.values()):
                        if other.target is target:
                            await other.close()
                    await asyncio.to_thread(target.restart)  # a restart waits on the target: off the loop
                    self._restarts.count += 1  # back empty: the next case brings its coordinators up
        return exchange

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

    async def _call(self, link: Link, api_key: int, version: int, request):
        """A request of the engine's own (set-up, not compared), on the link's connection."""
        with self._waiting():
            client = await link.client_for()
            return await client.call(api_key, version, request)

    @contextlib.contextmanager
    def _waiting(self):
        """Time spent on the targets and the wire (sending, answers, connections, set-up), not the
        harness's own. Waits that overlap (an answer held while the next operation runs) count once."""
        if self._waits == 0:
            self._wait_started = time.perf_counter()
        self._waits += 1
        try:
            yield
        finally:
            self._waits -= 1
            if self._waits == 0:
                self.waiting_seconds += time.perf_counter() - self._wait_started

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
        await self._close_member_links()
        for link in self._links:
            await link.close()


def _with_parts(shape: str, parts: list[str]) -> str:
    """``Api(a,b)`` with ``parts`` added inside the parentheses."""
    if not parts:
        return shape
    inside = shape[shape.index("(") + 1 : -1]
    return f"{shape[: shape.index('(')]}({','.join([*filter(None, [inside]), *parts])})"


def _write_outcome(exchange: Exchange):
    """What a write did, as far as its answer tells: taken (answered without an error, or no answer
    where none is due), else the fate and the errors."""
    errors = sorted({code for code in exchange.error_codes if code})
    if exchange.fate in (_ANSWERED, "no_response") and not errors:
        return "taken"
    return exchange.fate, errors
