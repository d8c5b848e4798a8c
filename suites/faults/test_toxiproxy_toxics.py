"""Each toxic, driven through toxiproxy-python, measured on real TCP traffic through a proxy to a local
echo server, within stated tolerances; on every Toxiproxy server that exists here (conftest.py:
kconform's embedded server, the same as a ``toxiproxy-server`` on PATH, and a real Toxiproxy when one
is installed or ``$TOXIPROXY_URL`` names one), with the same assertions."""

from __future__ import annotations

import errno
import re
import socket
import statistics
import threading
import time

import pytest

BIG = 100 * 1024


class EchoServer:
    """Echoes what it gets; ``send N`` makes it send N bytes then close; ``close`` closes; ``split``
    makes it answer with 10 bytes, then 2 ms later 10 more."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _serve(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            try:
                while data := conn.recv(65536):
                    if data == b"split":
                        conn.sendall(b"y" * 10)
                        time.sleep(0.002)
                        conn.sendall(b"z" * 10)
                        continue
                    if data.startswith(b"send "):
                        conn.sendall(b"x" * int(data.split()[1]))
                        return
                    if data == b"close":
                        return
                    conn.sendall(data)
            except OSError:
                return


@pytest.fixture
def proxy(toxiproxy, request):
    """A proxy to a new echo server on the module's Toxiproxy (conftest.py ``toxiproxy``)."""
    toxiproxy.point_client()
    echo = EchoServer()
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", request.node.name)[:60]
    p = toxiproxy.client.create(upstream=echo.address, name=name)
    yield p
    p.destroy()
    echo.sock.close()


def connect(proxy) -> socket.socket:
    host, port = proxy.listen.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def round_trip(sock: socket.socket, payload: bytes = b"ping") -> float:
    start = time.monotonic()
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(65536)
        assert chunk, "closed during a round trip"
        got += chunk
    return time.monotonic() - start


def read_until_closed(sock: socket.socket) -> tuple[bytes, float, list[int]]:
    start, got, sizes = time.monotonic(), b"", []
    while chunk := sock.recv(65536):
        got += chunk
        sizes.append(len(chunk))
    return got, time.monotonic() - start, sizes


def test_the_proxy_adds_no_delay_of_its_own_to_small_writes(proxy):
    """Go sets TCP_NODELAY on every connection, so Toxiproxy passes two small writes on as they come;
    with Nagle's algorithm the second would wait for the first one's delayed ACK (~40 ms)."""
    with connect(proxy) as sock:
        trips = []
        for _ in range(15):
            start = time.monotonic()
            sock.sendall(b"split")
            got = b""
            while len(got) < 20:
                got += sock.recv(100)
            trips.append(time.monotonic() - start)
    assert statistics.median(trips) < 0.02, trips


def test_latency_with_jitter_on_each_stream(proxy):
    with connect(proxy) as sock:
        base = statistics.median(round_trip(sock) for _ in range(5))
        proxy.add_toxic(type="latency", attributes={"latency": 100, "jitter": 20})
        trips = [round_trip(sock) - base for _ in range(10)]
        # 100 ms +- 20 ms: never under 80 ms (less 5 ms of timer slack), the median within 15 ms of 100,
        # and none far beyond 120 ms (a loaded machine may wake the proxy late, never early)
        assert min(trips) >= 0.075 and abs(statistics.median(trips) - 0.1) <= 0.015 and max(trips) <= 0.25, (
            trips
        )
        assert max(trips) - min(trips) > 0.005  # jitter varies it
        proxy.add_toxic(type="latency", stream="upstream", attributes={"latency": 50})
        both = statistics.median(round_trip(sock) for _ in range(5))
        assert 0.125 <= both - base <= 0.185, both  # 100 + 50
        proxy.destroy_toxic("latency_downstream")
        proxy.destroy_toxic("latency_upstream")
        assert statistics.median(round_trip(sock) for _ in range(5)) < base + 0.02  # back to normal, live


def test_bandwidth_limits_a_transfer(proxy):
    proxy.add_toxic(type="bandwidth", attributes={"rate": 50})  # 50 KB/s down
    with connect(proxy) as sock:
        sock.sendall(b"send %d" % BIG)
        got, seconds, _ = read_until_closed(sock)
    assert len(got) == BIG
    expected = BIG / (50 * 1000)  # Toxiproxy's KB is 1000 bytes: 2.05 s
    assert expected * 0.8 <= seconds <= expected * 1.25, seconds


def test_slow_close_holds_the_close(proxy):
    proxy.add_toxic(type="slow_close", attributes={"delay": 500})
    with connect(proxy) as sock:
        sock.sendall(b"send 10")
        got, seconds, _ = read_until_closed(sock)
    assert got == b"x" * 10 and 0.45 <= seconds <= 0.8, seconds


def test_timeout_holds_data_and_closes_after_its_timeout(proxy):
    with connect(proxy) as sock:
        proxy.add_toxic(type="timeout", attributes={"timeout": 0})
        sock.sendall(b"lost")
        sock.settimeout(0.5)
        with pytest.raises(TimeoutError):  # nothing comes back, and the connection stays open
            sock.recv(10)
        proxy.destroy_toxic("timeout_downstream")
        sock.settimeout(2)
        assert sock.recv(10) == b""  # removing a timeout toxic closes what it held, as Toxiproxy does
    proxy.add_toxic(type="timeout", attributes={"timeout": 300})
    with connect(proxy) as sock:
        sock.sendall(b"hello")
        start = time.monotonic()
        assert sock.recv(10) == b""
        assert 0.25 <= time.monotonic() - start <= 0.6


def test_reset_peer_resets_the_connection(proxy):
    with connect(proxy) as sock:
        assert round_trip(sock) < 0.1
        proxy.add_toxic(type="reset_peer", attributes={"timeout": 200})
        start = time.monotonic()
        sock.sendall(b"doomed")
        with pytest.raises(ConnectionResetError) as reset:
            while sock.recv(10):
                pass
        assert reset.value.errno == errno.ECONNRESET
        assert 0.15 <= time.monotonic() - start <= 0.5


def test_slicer_delivers_in_small_pieces(proxy):
    proxy.add_toxic(type="slicer", attributes={"average_size": 10, "size_variation": 5, "delay": 2000})
    with connect(proxy) as sock:
        sock.sendall(b"send 400")
        got, _, sizes = read_until_closed(sock)
    assert got == b"x" * 400
    # 10 +- 5 bytes a piece, 2 ms apart; a loaded reader may take two pieces in one read now and then
    assert len(sizes) >= 20 and sorted(sizes)[len(sizes) // 2] <= 15, sizes


def test_limit_data_closes_after_the_limit(proxy):
    proxy.add_toxic(type="limit_data", attributes={"bytes": 1000})
    with connect(proxy) as sock:
        sock.sendall(b"send 5000")
        got, _, _ = read_until_closed(sock)
    assert got == b"x" * 1000


def test_toxicity_zero_spares_and_one_applies(proxy):
    proxy.add_toxic(type="latency", toxicity=0.0, attributes={"latency": 300})
    with connect(proxy) as sock:
        assert round_trip(sock) < 0.1
    proxy.destroy_toxic("latency_downstream")
    proxy.add_toxic(type="latency", toxicity=1.0, attributes={"latency": 300})
    with connect(proxy) as sock:
        assert round_trip(sock) >= 0.29


def test_an_update_rolls_the_toxicity_again_on_live_connections(proxy, toxiproxy):
    """link.go UpdateToxic re-runs the toxic on every link, and ToxicStub.Run rolls its toxicity."""
    proxy.add_toxic(type="latency", toxicity=0.0, attributes={"latency": 300})
    with connect(proxy) as sock:
        assert round_trip(sock) < 0.1
        status, _ = toxiproxy.call(
            "PATCH", f"/proxies/{proxy.name}/toxics/latency_downstream", {"toxicity": 1}
        )
        assert status == 200
        assert round_trip(sock) >= 0.29


def test_disable_refuses_and_cuts_and_enable_restores(proxy):
    live = connect(proxy)
    assert round_trip(live) < 0.1
    proxy.disable()
    live.settimeout(2)
    assert live.recv(10) == b""  # cut
    host, port = proxy.listen.rsplit(":", 1)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=2)
    proxy.enable()
    with connect(proxy) as sock:
        assert round_trip(sock) < 0.1
    live.close()


def test_a_nemesis_schedule_step_adds_and_removes_a_toxic(proxy, toxiproxy):
    import asyncio

    from kconform.faults.nemesis import Nemesis, ToxiproxyDriver
    from kconform.faults.schedule import schedule_from_data

    schedule = schedule_from_data(
        {
            "step": [
                {
                    "at": "0ms",
                    "fault": "latency",
                    "links": [proxy.name],
                    "duration": "600ms",
                    "params": {"latency": 200},
                }
            ]
        }
    )
    nemesis = Nemesis(schedule, network=ToxiproxyDriver(toxiproxy.client))
    with connect(proxy) as sock:

        async def scenario():
            run = asyncio.ensure_future(nemesis.run(1.0))
            await asyncio.sleep(0.2)
            during = await asyncio.to_thread(round_trip, sock)
            await run
            after = await asyncio.to_thread(round_trip, sock)
            return during, after

        during, after = asyncio.run(scenario())
    assert during >= 0.19 and after < 0.1
    assert [(e.action, e.ok) for e in nemesis.log] == [("start", True), ("end", True)]
    assert proxy.toxics() == {}
