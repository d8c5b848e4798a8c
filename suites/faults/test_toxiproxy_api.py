"""Toxiproxy's HTTP API, asserted against every Toxiproxy server that exists here (see conftest.py:
kconform's embedded server, the same started as a ``toxiproxy-server`` on PATH, and a real Toxiproxy
when one is installed or ``$TOXIPROXY_URL`` names one), with the same assertions for each.

Every expected status code and error body comes from Toxiproxy's own source (Shopify/toxiproxy at
f48fd7f, v2.12.0+; gorilla/mux v1.8.1 for routing), named beside it: api.go (the handlers, the
``Err...`` values, ``joinError``, ``apiError``), proxy_collection.go, toxic_collection.go, proxy.go,
toxics/*.go, and api_test.go where Toxiproxy's own tests pin the same value. Where the text after
``bad request body: `` or a listen error is Go's own wording (``encoding/json``, ``net``), only the
status and the prefix are asserted."""

from __future__ import annotations

import socket
import subprocess
import sys
from urllib.parse import urlparse

import pytest
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists

from kconform.faults.toxiproxy import open_toxiproxy

UPSTREAM = "127.0.0.1:9"  # nothing needs to answer: the API never dials the upstream
PROXY_FIELDS = ("name", "listen", "upstream", "enabled", "toxics")  # proxy.go Proxy's JSON tags + toxics


def error(message: str, status: int) -> dict:
    """api.go apiError: ``json.Marshal(ApiError{Message, StatusCode})`` -> ``{"error", "status"}``."""
    return {"error": message, "status": status}


def proxy_view(proxy: dict) -> dict:
    """The documented fields of a proxy (a real Toxiproxy also writes its exported ``Logger``)."""
    return {key: proxy[key] for key in PROXY_FIELDS}


def bad_body(answer: tuple[int, object]) -> bool:
    """api.go ``joinError(err, ErrBadRequestBody)``: 400, ``bad request body: <encoding/json's error>``."""
    status, body = answer
    return (
        status == 400
        and isinstance(body, dict)
        and body["status"] == 400
        and body["error"].startswith("bad request body: ")
    )


def test_proxy_routes_and_status_codes(server):
    # api.go ProxyCreate: WriteHeader(http.StatusCreated), the proxy with its (no) toxics
    status, made = server.call(
        "POST", "/proxies", {"name": "a", "upstream": UPSTREAM, "listen": "127.0.0.1:0"}
    )
    assert status == 201, made
    assert made["name"] == "a" and made["upstream"] == UPSTREAM and made["enabled"] is True
    assert made["toxics"] == []
    # proxy.go Proxy.listen: Listen = listener.Addr().String(), so port 0 becomes the real port
    host, port = made["listen"].rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    # api.go ErrProxyAlreadyExists, from proxy_collection.go Add; api_test.go TestCreateProxyNameConflict
    assert server.call("POST", "/proxies", {"name": "a", "upstream": UPSTREAM}) == (
        409,
        error("proxy already exists", 409),
    )
    # api.go ProxyCreate: joinError(fmt.Errorf("name"), ErrMissingField), the name checked first;
    # api_test.go TestCreateProxyBlankName, TestCreateProxyBlankUpstream
    assert server.call("POST", "/proxies", {"upstream": "x:1"}) == (
        400,
        error("missing required field: name", 400),
    )
    assert server.call("POST", "/proxies", {}) == (400, error("missing required field: name", 400))
    assert server.call("POST", "/proxies", {"name": "b"}) == (
        400,
        error("missing required field: upstream", 400),
    )
    # api.go ProxyIndex: 200, a map of name -> proxy; ProxyShow: 200, the proxy
    status, listed = server.call("GET", "/proxies")
    assert status == 200 and set(listed) == {"a"} and proxy_view(listed["a"]) == proxy_view(made)
    status, shown = server.call("GET", "/proxies/a")
    assert status == 200 and proxy_view(shown) == proxy_view(made)
    # api.go ErrProxyNotFound, from proxy_collection.go getByName
    assert server.call("GET", "/proxies/nope") == (404, error("proxy not found", 404))
    # api.go ProxyUpdate (POST, deprecated, and PATCH): 200, the proxy; proxy.go Update stops it
    status, updated = server.call("POST", "/proxies/a", {"enabled": False})
    assert status == 200 and updated["enabled"] is False
    status, updated = server.call("PATCH", "/proxies/a", {"enabled": True, "upstream": "127.0.0.1:10"})
    assert status == 200 and updated["enabled"] is True and updated["upstream"] == "127.0.0.1:10"
    assert server.call("PATCH", "/proxies/nope", {"enabled": True}) == (404, error("proxy not found", 404))
    # api.go ProxyDelete: WriteHeader(http.StatusNoContent), no body; then proxy_collection.go Remove
    # finds nothing: api_test.go TestDeleteProxy ("Delete: HTTP 404: proxy not found")
    assert server.call("DELETE", "/proxies/a") == (204, None)
    assert server.call("DELETE", "/proxies/a") == (404, error("proxy not found", 404))
    # api.go Version: 200, {"version": Version}
    status, version = server.call("GET", "/version")
    assert status == 200 and isinstance(version["version"], str) and version["version"]


def test_a_proxy_listens_where_go_would(server):
    # api.go ProxyCreate with "enabled": false -> proxy_collection.go Add(proxy, false): not started,
    # so the listen address stays as given; api_test.go TestCreateDisabledProxy
    status, off = server.call(
        "POST", "/proxies", {"name": "off", "upstream": UPSTREAM, "listen": "127.0.0.1:0", "enabled": False}
    )
    assert (status, off["enabled"], off["listen"]) == (201, False, "127.0.0.1:0")
    # "enabled": null leaves Proxy{Enabled: true} as it was (encoding/json: null is a no-op)
    status, on = server.call(
        "POST", "/proxies", {"name": "on", "upstream": UPSTREAM, "listen": "localhost:0", "enabled": None}
    )
    assert status == 201 and on["enabled"] is True
    # net.Listen("tcp", "localhost:0") listens on one address, IPv4 first, and Addr() says which
    assert on["listen"].startswith("127.0.0.1:")
    # proxy.go Update -> Differs: an address that resolves to the one in use changes nothing
    same = "localhost:" + on["listen"].rsplit(":", 1)[1]
    assert server.call("PATCH", "/proxies/on", {"listen": same})[1]["listen"] == on["listen"]


def test_toxic_routes_and_status_codes(server):
    server.call("POST", "/proxies", {"name": "p", "upstream": UPSTREAM, "listen": "127.0.0.1:0"})
    # api.go ToxicCreate writes no status: 200. toxic_collection.go AddToxicJson: Stream
    # "downstream" and Toxicity 1.0 by default, the name "<type>_<stream>"; toxics/latency.go's fields
    status, toxic = server.call(
        "POST", "/proxies/p/toxics", {"type": "latency", "attributes": {"latency": 5}}
    )
    assert status == 200 and toxic == {
        "name": "latency_downstream",
        "type": "latency",
        "stream": "downstream",
        "toxicity": 1.0,
        "attributes": {"latency": 5, "jitter": 0},
    }
    # api.go ErrToxicAlreadyExists; api_test.go TestAddConflictingToxic
    assert server.call("POST", "/proxies/p/toxics", {"type": "latency"}) == (
        409,
        error("toxic already exists", 409),
    )
    # api.go ErrInvalidToxicType: toxics.New finds no such type in the registry
    assert server.call("POST", "/proxies/p/toxics", {"type": "nope"}) == (
        400,
        error("invalid toxic type", 400),
    )
    assert server.call("POST", "/proxies/p/toxics", {}) == (400, error("invalid toxic type", 400))
    # api.go ErrInvalidStream: stream.ParseDirection knows only upstream and downstream (any case);
    # api_test.go TestInvalidStream. The stream is checked before the type.
    invalid_stream = (400, error("stream was invalid, can be either upstream or downstream", 400))
    assert (
        server.call("POST", "/proxies/p/toxics", {"type": "latency", "stream": "sideways"}) == invalid_stream
    )
    assert server.call("POST", "/proxies/p/toxics", {"type": "nope", "stream": ""}) == invalid_stream
    # AddToxicJson decodes the attributes into the type's struct: toxics/bandwidth.go Rate is int64,
    # so a string, or a number that is not an integer literal, is a bad request body
    for rate in ("fast", 5.0, 1.5, True):
        answer = server.call("POST", "/proxies/p/toxics", {"type": "bandwidth", "attributes": {"rate": rate}})
        assert bad_body(answer), (rate, answer)
    assert bad_body(server.call("POST", "/proxies/p/toxics", {"type": "latency", "toxicity": "all"}))
    # toxics/noop.go registers "noop" like any other type; api_test.go TestAddNoop
    status, noop = server.call("POST", "/proxies/p/toxics", {"name": "quiet", "type": "noop"})
    assert status == 200 and (noop["type"], noop["attributes"]) == ("noop", {})
    # ParseDirection lower-cases; the toxic keeps the stream as it was written, and so does its name
    status, shouty = server.call("POST", "/proxies/p/toxics", {"type": "slow_close", "stream": "UPSTREAM"})
    assert status == 200 and (shouty["name"], shouty["stream"]) == ("slow_close_UPSTREAM", "UPSTREAM")
    status, up = server.call(
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
    assert status == 200 and (up["stream"], up["toxicity"], up["attributes"]) == (
        "upstream",
        0.5,
        {"rate": 9},
    )
    # toxic_collection.go GetToxicArray: the upstream chain first, then the downstream one, each in
    # the order its toxics were added (api.go ToxicIndex, and the "toxics" of every proxy)
    status, listed = server.call("GET", "/proxies/p/toxics")
    assert status == 200 and listed == [shouty, up, toxic, noop]
    assert server.call("GET", "/proxies/p")[1]["toxics"] == listed
    # api.go ToxicShow: 200, the toxic; ErrToxicNotFound when toxic_collection.go GetToxic is nil
    assert server.call("GET", "/proxies/p/toxics/slow") == (200, up)
    assert server.call("GET", "/proxies/p/toxics/none") == (404, error("toxic not found", 404))
    assert server.call("GET", "/proxies/none/toxics") == (404, error("proxy not found", 404))
    # toxic_collection.go UpdateToxicJson: attributes decode over the toxic's own, the toxicity
    # defaults to its own; api_test.go TestUpdateToxics
    status, changed = server.call("POST", "/proxies/p/toxics/slow", {"attributes": {"rate": 20}})
    assert status == 200 and (changed["attributes"], changed["toxicity"]) == ({"rate": 20}, 0.5)
    status, changed = server.call("PATCH", "/proxies/p/toxics/slow", {"toxicity": 0.25})
    assert status == 200 and (changed["attributes"], changed["toxicity"]) == ({"rate": 20}, 0.25)
    status, changed = server.call(
        "PATCH", "/proxies/p/toxics/latency_downstream", {"attributes": {"jitter": 2}}
    )
    assert status == 200 and changed["attributes"] == {"latency": 5, "jitter": 2}
    assert bad_body(server.call("PATCH", "/proxies/p/toxics/slow", {"attributes": {"rate": "x"}}))
    assert server.call("PATCH", "/proxies/p/toxics/none", {"toxicity": 1}) == (
        404,
        error("toxic not found", 404),
    )
    # api.go ToxicDelete: 204, no body; toxic_collection.go RemoveToxic: ErrToxicNotFound after
    assert server.call("DELETE", "/proxies/p/toxics/slow") == (204, None)
    assert server.call("DELETE", "/proxies/p/toxics/slow") == (404, error("toxic not found", 404))
    server.call("POST", "/proxies/p", {"enabled": False})
    # api.go ResetState: every proxy started again, every toxic removed, 204
    assert server.call("POST", "/reset") == (204, None)
    after = server.call("GET", "/proxies/p")[1]
    assert after["enabled"] is True and after["toxics"] == []


def test_populate_creates_keeps_replaces_and_checks_first(server):
    first = [
        {"name": "x", "listen": "127.0.0.1:0", "upstream": UPSTREAM},
        {"name": "y", "listen": "127.0.0.1:0", "upstream": UPSTREAM},
    ]
    # api.go Populate: 201 and {"proxies": [...]} (the embedded *ApiError is nil, so omitted)
    status, made = server.call("POST", "/populate", first)
    assert status == 201 and set(made) == {"proxies"}
    assert [(p["name"], p["enabled"]) for p in made["proxies"]] == [("x", True), ("y", True)]
    x, y = made["proxies"]
    server.call("POST", "/proxies/x/toxics", {"type": "latency"})
    # proxy_collection.go AddOrReplace: x's listen resolves to the address it has (Differs is false),
    # so x is kept, toxics and all; y's upstream differs, so y is stopped and replaced;
    # api_test.go TestPopulateExistingProxy
    again = [
        {"name": "x", "listen": "localhost:" + x["listen"].rsplit(":", 1)[1], "upstream": UPSTREAM},
        {"name": "y", "listen": y["listen"], "upstream": "127.0.0.1:10"},
    ]
    status, kept = server.call("POST", "/populate", again)
    assert status == 201 and [p["listen"] for p in kept["proxies"]] == [x["listen"], y["listen"]]
    assert [len(p["toxics"]) for p in kept["proxies"]] == [1, 0]
    assert kept["proxies"][1]["upstream"] == "127.0.0.1:10"
    # proxy_collection.go PopulateJson checks every entry before it changes anything:
    # joinError(fmt.Errorf("name at proxy %d", i+1), ErrMissingField), and no proxies (null);
    # api_test.go TestPopulateWithBadName
    bad = [{"name": "z", "upstream": UPSTREAM, "listen": "127.0.0.1:0"}, {"upstream": "1:1"}]
    assert server.call("POST", "/populate", bad) == (
        400,
        {**error("missing required field: name at proxy 2", 400), "proxies": None},
    )
    bad = [{"name": "z", "upstream": UPSTREAM, "listen": "127.0.0.1:0"}, {"name": "w"}]
    assert server.call("POST", "/populate", bad) == (
        400,
        {**error("missing required field: upstream at proxy 2", 400), "proxies": None},
    )
    assert server.call("GET", "/proxies/z")[0] == 404
    # an entry that cannot listen ends the list: api.go Populate answers a non-ApiError with 500
    # and the proxies made before it; api_test.go TestPopulateProxyWithBadDataShouldReturnError
    status, partial = server.call(
        "POST",
        "/populate",
        [
            {"name": "one", "listen": "127.0.0.1:0", "upstream": UPSTREAM},
            {"name": "two", "listen": "local373", "upstream": UPSTREAM},
            {"name": "three", "listen": "127.0.0.1:0", "upstream": UPSTREAM},
        ],
    )
    assert status == 500 and partial["status"] == 500 and partial["error"]
    assert [p["name"] for p in partial["proxies"]] == ["one"]
    assert sorted(server.call("GET", "/proxies")[1]) == ["one", "x", "y"]
    # the body must decode into a list of proxies: joinError(err, ErrBadRequestBody), proxies null
    status, body = server.call("POST", "/populate", {"not": "a list"})
    assert status == 400 and body["proxies"] is None and body["error"].startswith("bad request body: ")
    # an empty list populates nothing: proxiesWithToxics of no proxies is a nil slice, written null
    assert server.call("POST", "/populate", []) == (201, {"proxies": None})


def test_bad_input_is_answered_and_the_server_lives_on(server):
    # ProxyCreate: json.NewDecoder(body).Decode fails -> joinError(err, ErrBadRequestBody)
    assert bad_body(server.call("POST", "/proxies", raw=b"{not json"))
    assert bad_body(server.call("POST", "/proxies", raw=b"[1, 2]"))
    assert bad_body(server.call("POST", "/proxies", {"name": 5, "upstream": UPSTREAM}))
    assert bad_body(server.call("POST", "/proxies", {"name": "q", "upstream": UPSTREAM, "enabled": "yes"}))
    # an empty body is io.EOF: "bad request body: EOF"
    assert server.call("POST", "/proxies", raw=b"") == (400, error("bad request body: EOF", 400))
    # a listen address net.Listen refuses is a plain Go error: apiError answers it with 500
    status, failed = server.call(
        "POST", "/proxies", {"name": "q", "upstream": UPSTREAM, "listen": "nonsense"}
    )
    assert status == 500 and failed["status"] == 500 and "nonsense" in failed["error"]
    assert server.call("GET", "/proxies/q")[0] == 404  # proxy_collection.go Add: not added
    # a port in use: api_test.go TestCreateProxyPortConflict pins the text
    # ("create: HTTP 500: listen tcp 127.0.0.1:3310: bind: address already in use")
    taken = server.call("POST", "/proxies", {"name": "q", "upstream": UPSTREAM, "listen": "127.0.0.1:0"})[1]
    assert server.call(
        "POST", "/proxies", {"name": "q2", "upstream": UPSTREAM, "listen": taken["listen"]}
    ) == (
        500,
        error(f"listen tcp {taken['listen']}: bind: address already in use", 500),
    )
    assert bad_body(server.call("POST", "/proxies/q/toxics", raw=b"\xff\xfe"))
    assert bad_body(server.call("POST", "/proxies/q/toxics", {"type": "latency", "attributes": [1]}))
    # AddToxicJson's first Decode puts the attributes into a NoopToxic: not an object fails there,
    # before the type is looked at
    assert bad_body(server.call("POST", "/proxies/q/toxics", {"type": "nope", "attributes": "x"}))
    # encoding/json matches keys to fields exactly, else case-insensitively
    status, caps = server.call("POST", "/proxies/q/toxics", {"Type": "latency", "NAME": "caps"})
    assert status == 200 and (caps["name"], caps["type"]) == ("caps", "latency"), caps
    # gorilla/mux Router.ServeHTTP: no route -> net/http NotFoundHandler, a text body;
    # a route with another method -> methodNotAllowed, the status alone
    assert server.call("GET", "/no/such/route") == (404, "404 page not found\n")
    assert server.call("GET", "/proxies/q/") == (404, "404 page not found\n")  # no StrictSlash
    assert server.call("GET", "/proxies//q") == (301, None)  # mux cleanPath: redirected to /proxies/q
    assert server.call("PUT", "/proxies") == (405, None)
    assert server.call("GET", "/reset") == (405, None)
    # api.go stopBrowsersMiddleware; api_test.go TestBrowserGets403
    browser = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64)"}
    assert server.call("GET", "/proxies", headers=browser) == (403, "User agent not allowed\n")
    assert server.call("GET", "/proxies", headers={"User-Agent": "Wget/2.1"})[0] == 200
    host, port = server.address
    with socket.create_connection((host, port), timeout=5) as raw:  # not HTTP at all: net/http's 400
        raw.sendall(b"\x00\x01garbage\r\n\r\n")
        assert raw.recv(200).startswith(b"HTTP/1.1 400")
    assert server.call("GET", "/version")[0] == 200


def test_toxiproxy_python_drives_it(server):
    client = server.client
    assert client.running() and b"version" in client.version()
    proxy = client.create(upstream=UPSTREAM, name="py")
    with pytest.raises(ProxyExists):
        client.create(upstream=UPSTREAM, name="py")
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
    assert client.populate([{"name": "pop", "upstream": UPSTREAM, "listen": "127.0.0.1:0"}])
    assert set(client.proxies()) == {"py", "pop"}
    client.reset()
    client.destroy_all()
    assert client.proxies() == {}


def test_open_toxiproxy_prefers_a_toxiproxy_server_on_path(stand_in, stand_in_dir, monkeypatch):
    """A URL given wins; else ``toxiproxy-server`` from PATH, started on a free port with Toxiproxy's
    own flags; else the embedded server. The stand-in binary is the embedded server in a process of
    its own, so what the suites assert of it they assert of a binary that open_toxiproxy started."""
    script = stand_in(stand_in_dir)
    calls = stand_in_dir / "toxiproxy-server.calls"
    monkeypatch.setenv("PATH", str(stand_in_dir))  # nothing else: a real toxiproxy-server must not win
    with open_toxiproxy() as handle:
        assert handle.kind == "binary"
        port = urlparse(handle.url).port
        assert calls.read_text().split() == ["-host", "127.0.0.1", "-port", str(port)]
        made = handle.client.create(upstream=UPSTREAM, name="in-the-binary")
        assert made.listen.startswith("127.0.0.1:")
        with open_toxiproxy(handle.url) as given:  # a URL beats the binary on PATH
            assert given.kind == "given" and set(given.client.proxies()) == {"in-the-binary"}
    with pytest.raises(OSError):  # stopped with the context
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    script.unlink()
    with open_toxiproxy() as handle:
        assert handle.kind == "embedded" and handle.client.proxies() == {}


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
            proxy = handle.client.create(upstream=UPSTREAM, name="cli")
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
