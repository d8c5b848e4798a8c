"""The network side of one broker node: accept connections, frame requests, answer them in order.

Each connection is served by one task that reads, frames and handles requests one at a time, so
pipelined requests are answered in the order they came, as Kafka does by muting a channel while a
request is in flight. A bad connection (oversized frame, malformed request, idle too long) is closed
without touching any other."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import struct

from kconform.codecs import FrameDecoder, FrameTooLarge

from .dispatch import CloseConnection, Dispatcher

__all__ = ["BrokerServer"]

log = logging.getLogger(__name__)
_READ_SIZE = 256 * 1024
_SIZE = struct.Struct(">i")


async def _send(writer: asyncio.StreamWriter, buffer: bytearray, splices: list, size: int) -> None:
    """Write one response frame; record bytes still in log files go out with sendfile."""
    writer.write(_SIZE.pack(size))
    if not splices:
        writer.write(buffer)
        await writer.drain()
        return
    loop = asyncio.get_running_loop()
    view = memoryview(buffer)
    position = 0
    for at, records in splices:
        writer.write(view[position:at])
        await writer.drain()
        region = records.region
        with os.fdopen(os.dup(region.fd), "rb") as file:
            sent = await loop.sendfile(writer.transport, file, region.position, region.size)
        if sent != region.size:  # the segment shrank under us: the frame cannot be completed
            raise ConnectionError(f"sent {sent} of {region.size} record bytes; closing the connection")
        position = at
    writer.write(view[position:])
    await writer.drain()


class BrokerServer:
    def __init__(self, dispatcher: Dispatcher, *, max_request_bytes: int, idle_timeout_s: float) -> None:
        self.dispatcher = dispatcher
        self.max_request_bytes = max_request_bytes
        self.idle_timeout_s = idle_timeout_s
        self._server: asyncio.Server | None = None
        self._connections: dict[asyncio.Task, asyncio.StreamWriter] = {}
        self._stopping = False
        self._ids = itertools.count(1)

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._serve, host, port, reuse_address=True)
        sockname = self._server.sockets[0].getsockname()
        return sockname[0], sockname[1]

    async def stop(self) -> None:
        """Close every connection whatever its client is doing (Kafka's SocketServer.shutdown):
        aborting the transports ends every read at once, so no cancellation can be lost in a read
        that completes at the same moment."""
        self._stopping = True
        if self._server is not None:
            self._server.close()
        for task, writer in list(self._connections.items()):
            writer.transport.abort()
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if self._stopping:
            writer.transport.abort()
            return
        self._connections[task] = writer
        connection_id = next(self._ids)
        peer = "{}:{}".format(*writer.get_extra_info("peername")[:2])
        decoder = FrameDecoder(max_frame_size=self.max_request_bytes)
        try:
            while not self._stopping:
                try:
                    data = await asyncio.wait_for(reader.read(_READ_SIZE), self.idle_timeout_s)
                except TimeoutError:
                    log.info("closing idle connection from %s", peer)
                    return
                if not data:
                    return
                decoder.feed(data)
                for frame in decoder:
                    response = await self.dispatcher.handle(frame, peer=peer, connection_id=connection_id)
                    if response is not None:
                        await _send(writer, *response)
        except FrameTooLarge as exc:
            log.warning("closing connection from %s: %s", peer, exc)
        except CloseConnection:
            pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # Shutdown. Ending the task normally, not as cancelled, keeps asyncio's stream callback in
            # Python 3.11 from logging the cancellation as an error.
            pass
        finally:
            self._connections.pop(task, None)
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, OSError):
                pass
            self.dispatcher.broker.connection_closed(connection_id)
