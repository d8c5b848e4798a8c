"""The embedded Toxiproxy server speaks Toxiproxy's HTTP API: every route, the JSON shapes, the status
codes (201 created, 200, 204, 409 existing, 400 invalid, 404 missing) and error bodies, over raw HTTP
and through toxiproxy-python; bad input gets an error, never a dead server."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys

import pytest
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists

from kconform.faults.toxiproxy import EmbeddedToxiproxy, open_toxiproxy


@pytest.fixture
def server():
    with EmbeddedToxiproxy() as s:
        yield s


def call(server, method, path, body=None, raw=None):
    conn = http.client.HTTPConnection(server.host, server.port, timeout=5)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    payload = response.read()
    conn.close()
    return response.status, (json.loads(payload) if payload else None)


def test_proxy_routes_and_status_codes(server):
    status, made = call(
        server, "POST", "/proxies", {"name": "a", "upstream": "127.0.0.1:9", "listen": "127.0.0.1:0"}
    )
    assert status == 201 and made["name"] == "a" and made["enabled"] is True and made["toxics"] == []
    assert not made["listen"].endswith(":0")  # the real port
    assert call(server, "POST", "/proxies", {"name": "a", "upstream": "127.0.0.1:9"}) == (
        409,
        {"error": "proxy already exists", "status": 409},
    )
    assert call(server, "POST", "/proxies", {"upstream": "x:1"}) == (
        400,
        {"error": "missing required field: name", "status": 400},
    )
    assert call(server, "POST", "/proxies", {"name": "b"})[0] == 400
    status, listed = call(server, "GET", "/proxies")
    assert status == 200 and set(listed) == {"a"} and listed["a"]["upstream"] == "127.0.0.1:9"
    assert call(server, "GET", "/proxies/a") == (200, made)
    assert call(server, "GET", "/proxies/nope") == (404, {"error": "proxy not found", "status": 404})
    status, updated = call(server, "POST", "/proxies/a", {"enabled": False})
    assert status == 200 and updated["enabled"] is False
    status, updated = call(server, "PATCH", "/proxies/a", {"enabled": True, "upstream": "127.0.0.1:10"})
    assert status == 200 and updated["enabled"] is True and updated["upstream"] == "127.0.0.1:10"
    assert call(server, "DELETE", "/proxies/a") == (204, None)
    assert call(server, "DELETE", "/proxies/a")[0] == 404
    status, version = call(server, "GET", "/version")
    assert status == 200 and version["version"].startswith("2.")


def test_toxic_routes_and_status_codes(server):
    call(server, "POST", "/proxies", {"name": "p", "upstream": "127.0.0.1:9"})
    status, toxic = call(
        server, "POST", "/proxies/p/toxics", {"type": "latency", "attributes": {"latency": 5}}
    )
    assert status == 200 and toxic == {
        "name": "latency_downstream",
        "type": "latency",
        "stream": "downstream",
        "toxicity": 1.0,
        "attributes": {"latency": 5, "jitter": 0},
    }
    assert call(server, "POST", "/proxies/p/toxics", {"type": "latency"}) == (
        409,
        {"error": "toxic already exists", "status": 409},
    )
    assert call(server, "POST", "/proxies/p/toxics", {"type": "nope"}) == (
        400,
        {"error": "invalid toxic type", "status": 400},
    )
    assert call(server, "POST", "/proxies/p/toxics", {"type": "latency", "stream": "sideways"})[0] == 400
    assert (
        call(server, "POST", "/proxies/p/toxics", {"type": "bandwidth", "attributes": {"rate": "fast"}})[0]
        == 400
    )
    status, up = call(
        server,
        "POST",
        "/proxies/p/toxics",
        {
            "name": "slow",
            "type": "bandwidth",
            "stream": "upstream",
            "toxicity": 0.5,
            "attributes": {"rate": 9},
        },
    )
    assert status == 200 and up["stream"] == "upstream" and up["toxicity"] == 0.5
    assert call(server, "GET", "/proxies/p/toxics")[1] == [toxic, up]
    assert call(server, "GET", "/proxies/p/toxics/slow") == (200, up)
    status, changed = call(server, "POST", "/proxies/p/toxics/slow", {"attributes": {"rate": 20}})
    assert status == 200 and changed["attributes"] == {"rate": 20}
    assert call(server, "GET", "/proxies/p/toxics/none") == (404, {"error": "toxic not found", "status": 404})
    assert call(server, "DELETE", "/proxies/p/toxics/slow") == (204, None)
    assert call(server, "DELETE", "/proxies/p/toxics/slow")[0] == 404
    assert call(server, "GET", "/proxies/p")[1]["toxics"] == [toxic]
    call(server, "POST", "/proxies/p", {"enabled": False})
    assert call(server, "POST", "/reset") == (204, None)
    after = call(server, "GET", "/proxies/p")[1]
    assert after["enabled"] is True and after["toxics"] == []


def test_populate_creates_keeps_and_replaces(server):
    first = [
        {"name": "x", "listen": "127.0.0.1:0", "upstream": "127.0.0.1:9"},
        {"name": "y", "listen": "127.0.0.1:0", "upstream": "127.0.0.1:9"},
    ]
    status, made = call(server, "POST", "/populate", first)
    assert status == 201 and [p["name"] for p in made["proxies"]] == ["x", "y"]
    x = made["proxies"][0]
    status, again = call(
        server, "POST", "/populate", [{"name": "x", "listen": x["listen"], "upstream": "127.0.0.1:9"}]
    )
    assert status == 201 and again["proxies"][0]["listen"] == x["listen"]  # the same proxy kept
    status, bad = call(
        server, "POST", "/populate", [{"name": "z", "upstream": "127.0.0.1:9"}, {"upstream": "1:1"}]
    )
    assert status == 400 and [p["name"] for p in bad["proxies"]] == ["z"]
    assert call(server, "POST", "/populate", {"not": "a list"})[0] == 400


def test_bad_input_is_answered_and_the_server_lives_on(server):
    assert call(server, "POST", "/proxies", raw=b"{not json")[0] == 400
    assert call(server, "POST", "/proxies", raw=b"[1, 2]")[0] == 400
    assert call(server, "POST", "/proxies", {"name": "q", "upstream": "1:1", "listen": "nonsense"})[0] >= 400
    call(server, "POST", "/proxies", {"name": "q", "upstream": "127.0.0.1:9"})
    assert call(server, "POST", "/proxies/q/toxics", raw=b"\xff\xfe")[0] == 400
    assert call(server, "POST", "/proxies/q/toxics", {"type": "latency", "attributes": [1]})[0] == 400
    assert call(server, "GET", "/no/such/route")[0] == 404
    with socket.create_connection((server.host, server.port), timeout=5) as raw:  # not HTTP at all
        raw.sendall(b"\x00\x01garbage\r\n\r\n")
        assert raw.recv(200).startswith(b"HTTP/1.1 400")
    assert call(server, "GET", "/version")[0] == 200


def test_toxiproxy_python_drives_it():
    with open_toxiproxy() as handle:
        assert handle.kind == "embedded"
        client = handle.client
        assert client.running() and b"version" in client.version()
        proxy = client.create(upstream="127.0.0.1:9", name="py")
        with pytest.raises(ProxyExists):
            client.create(upstream="127.0.0.1:9", name="py")
        proxy.add_toxic(type="latency", attributes={"latency": 10})
        assert set(proxy.toxics()) == {"latency_downstream"}
        with pytest.raises(ProxyExists):
            proxy.add_toxic(type="latency", attributes={"latency": 10})
        with pytest.raises(InvalidToxic):
            proxy.add_toxic(type="nonsense")
        with proxy.down():
            assert client.get_proxy("py").enabled is False
        assert client.get_proxy("py").enabled is True
        proxy.destroy_toxic("latency_downstream")
        with pytest.raises(NotFound):
            proxy.destroy_toxic("latency_downstream")
        assert client.populate([{"name": "pop", "upstream": "127.0.0.1:9", "listen": "127.0.0.1:0"}])
        assert set(client.proxies()) == {"py", "pop"}
        client.reset()
        client.destroy_all()
        assert client.proxies() == {}


def test_kconform_toxiproxy_command_serves_the_api():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "kconform.harness.cli", "toxiproxy", "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert f"127.0.0.1:{port}" in line
        with open_toxiproxy(f"127.0.0.1:{port}") as handle:
            assert handle.kind == "given"
            proxy = handle.client.create(upstream="127.0.0.1:9", name="cli")
            proxy.add_toxic(type="timeout", attributes={"timeout": 100})
            assert handle.client.get_proxy("cli").toxics()["timeout_downstream"].attributes == {
                "timeout": 100
            }
    finally:
        process.terminate()
        process.wait(10)
    assert process.returncode in (0, -15)


def test_a_wrong_url_is_a_clear_error():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(RuntimeError, match="no Toxiproxy answers"):
        with open_toxiproxy(f"127.0.0.1:{port}"):
            pass
    with socket.socket() as silent:  # something listens but speaks no HTTP
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        with pytest.raises(RuntimeError, match="no Toxiproxy answers"):
            with open_toxiproxy(f"127.0.0.1:{silent.getsockname()[1]}"):
                pass
