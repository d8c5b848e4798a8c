"""One proxied connection: the client's socket, the upstream socket, and a pipe each way (upstream:
client to server; downstream: server to client) through the toxics in force on that stream.

Each pipe has a reader, which runs every chunk through its toxics at once (so a latency toxic delays
each chunk without slowing the reading, as Toxiproxy's timestamped chunks do), and a writer, which sends
the pieces in order when each may leave. Toxics come and go while the connection lives."""

from __future__ import annotations

import asyncio
import collections
import random
import socket
import struct
from collections.abc import Callable

from .toxics import Effect, ToxicState, new_state

__all__ = ["Connection"]

_CHUNK = 32 * 1024
_HIGH_WATER = 4 * 1024 * 1024  # bytes queued in a pipe before its reader waits


class _Pipe:
    def __init__(self, conn: Connection, stream: str, reader, writer) -> None:
        self.conn = conn
        self.stream = stream
        self.reader = reader
        self.writer = writer
        self.toxics: dict[str, ToxicState] = {}  # in the order they were added
        self.queue: collections.deque = collections.deque()  # (data | None for close, leave_at)
        self.queued_bytes = 0
        self.wake = asyncio.Event()
        self.drained = asyncio.Event()
        self.drained.set()
        self.last_leave = 0.0
        self.idle_timer: asyncio.TimerHandle | None = None
        self.closing = False  # a toxic closed the connection once what it let through is sent

    # ---- toxics ---------------------------------------------------------------------------------

    def add(self, name: str, state: ToxicState) -> None:
        self.toxics[name] = state
        if state.active:
            self._apply(state.on_attach())

    def restart(self, name: str, toxicity: float) -> None:
        """The toxic runs again (link.go ``UpdateToxic``, or a toxic added after it): a new toxicity
        roll, and a timeout toxic's wait starts over."""
        state = self.toxics.get(name)
        if state is None:
            return
        if state.roll(toxicity):
            self._apply(state.on_attach())
        elif state.kind == "timeout" and not self._timeouts():
            self._cancel_idle()

    def _timeouts(self) -> bool:
        return any(s.kind == "timeout" and s.active for s in self.toxics.values())

    def remove(self, name: str) -> None:
        state = self.toxics.pop(name, None)
        if state is None:
            return
        if state.kind == "timeout":
            self.conn.close()  # Toxiproxy's timeout Cleanup closes what it held
        elif not self._timeouts():
            self._cancel_idle()

    def _active(self) -> list[ToxicState]:
        return [s for s in self.toxics.values() if s.active]

    # ---- flow -----------------------------------------------------------------------------------

    async def read_loop(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                if self.queued_bytes > _HIGH_WATER:
                    self.drained.clear()
                    await self.drained.wait()
                data = await self.reader.read(_CHUNK)
                now = loop.time()
                if not data:
                    leave = now
                    for state in self._active():
                        leave = state.on_end(leave)
                    self._push(None, leave)
                    return
                pieces, effects = [(data, now)], []
                for state in self._active():
                    results = [state.on_data(d, t) for d, t in pieces]
                    pieces = [p for r in results for p in r.pieces]
                    effects += results
                for d, t in pieces:
                    self._push(d, t)
                for effect in effects:  # after the pieces: a close comes once they are sent
                    self._apply(effect)
                if self.closing or self.conn.closed:
                    return
        except (ConnectionError, OSError):
            self.conn.close()

    def _apply(self, effect: Effect) -> None:
        if effect.reset_in is not None:
            asyncio.get_running_loop().call_later(effect.reset_in, self.conn.reset)
        if effect.idle_close_in is not None:
            self._cancel_idle()
            self.idle_timer = asyncio.get_running_loop().call_later(effect.idle_close_in, self.conn.close)
        if effect.close:
            self.closing = True
            self._push(None, self.last_leave)

    def _cancel_idle(self) -> None:
        if self.idle_timer is not None:
            self.idle_timer.cancel()
            self.idle_timer = None

    def _push(self, data: bytes | None, leave: float) -> None:
        leave = max(leave, self.last_leave)  # in order, whatever each piece's delay
        self.last_leave = leave
        self.queue.append((data, leave))
        if data:
            self.queued_bytes += len(data)
        self.wake.set()

    async def write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                while not self.queue:
                    self.wake.clear()
                    await self.wake.wait()
                data, leave = self.queue[0]
                delay = leave - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                self.queue.popleft()
                if data is None:
                    self.conn.close()
                    return
                self.queued_bytes -= len(data)
                self.writer.write(data)
                await self.writer.drain()
                if self.queued_bytes <= _HIGH_WATER:
                    self.drained.set()
        except (ConnectionError, OSError):
            self.conn.close()


class Connection:
    """A client connection and its upstream twin, piped both ways through the proxy's toxics."""

    def __init__(
        self,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        on_closed: Callable[[Connection], None],
        rng: random.Random,
    ) -> None:
        self.client_writer = client[1]
        self.upstream_writer = upstream[1]
        self.pipes = {
            "upstream": _Pipe(self, "upstream", client[0], upstream[1]),
            "downstream": _Pipe(self, "downstream", upstream[0], client[1]),
        }
        self.on_closed = on_closed
        self.rng = rng
        self.closed = False
        self.tasks: list[asyncio.Task] = []

    def start(self, toxics) -> None:
        for toxic in toxics:
            state = new_state(toxic.type, toxic.attributes, toxic.toxicity, self.rng)
            self.pipes[toxic.direction].add(toxic.name, state)
        for pipe in self.pipes.values():
            self.tasks += [asyncio.ensure_future(pipe.read_loop()), asyncio.ensure_future(pipe.write_loop())]

    def add_toxic(self, toxic, previous=None) -> None:
        """A toxic added to the proxy reaches this connection; ``previous`` is the toxic before it on
        that stream, which link.go ``AddToxic`` interrupts and runs again."""
        pipe = self.pipes[toxic.direction]
        if previous is not None:
            pipe.restart(previous.name, previous.toxicity)
        pipe.add(toxic.name, new_state(toxic.type, toxic.attributes, toxic.toxicity, self.rng))

    def update_toxic(self, toxic) -> None:
        self.pipes[toxic.direction].restart(toxic.name, toxic.toxicity)

    def remove_toxic(self, toxic) -> None:
        self.pipes[toxic.direction].remove(toxic.name)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for writer in (self.client_writer, self.upstream_writer):
            writer.close()
        for pipe in self.pipes.values():
            pipe._cancel_idle()
        current = asyncio.current_task()
        for task in self.tasks:
            if task is not current:
                task.cancel()
        self.on_closed(self)

    def reset(self) -> None:
        """Close with TCP RST (SO_LINGER 0), dropping whatever is unsent, as reset_peer does."""
        if self.closed:
            return
        for writer in (self.client_writer, self.upstream_writer):
            sock = writer.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            writer.transport.abort()
        self.close()
