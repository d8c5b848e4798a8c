"""Connection limits as Kafka's ``ConnectionQuotas`` applies them: one connection past
``max.connections.per.ip`` is closed at once, and one past ``max.connections`` (or a listener's own)
waits unanswered until another closes; the decisions themselves, unit by unit."""

from __future__ import annotations

import socket
import time

import pytest

from kconform.codecs.framing import encode_request, size_prefixed
from kconform.codecs.messages import ApiVersionsRequest
from kconform.reference_broker.config import ConfigError
from kconform.reference_broker.connection_limits import Admission, ConnectionLimits, parse_ip_overrides
from kconform.reference_broker.process import start_broker_process

API_VERSIONS = size_prefixed(encode_request(18, 3, 1, "limits", ApiVersionsRequest(
    client_software_name="t", client_software_version="1")))  # fmt: skip


def test_decisions():
    limits = ConnectionLimits(broker_max=2, per_ip_max=1, per_ip_overrides={"10.0.0.9": 5})
    assert limits.admit("PLAINTEXT", "10.0.0.1") is Admission.ACCEPT
    limits.opened("PLAINTEXT", "10.0.0.1")
    assert limits.admit("PLAINTEXT", "10.0.0.1") is Admission.REJECT
    assert limits.admit("PLAINTEXT", "10.0.0.9") is Admission.ACCEPT
    limits.opened("PLAINTEXT", "10.0.0.9")
    assert limits.admit("PLAINTEXT", "10.0.0.9") is Admission.WAIT, "the broker is full"
    limits.closed("PLAINTEXT", "10.0.0.1")
    assert limits.admit("PLAINTEXT", "10.0.0.9") is Admission.ACCEPT


def test_the_inter_broker_listener_is_exempt_from_the_broker_wide_limit():
    limits = ConnectionLimits(broker_max=1, inter_broker_listener="INTERNAL", listeners=2,
                              per_listener_max={"EXTERNAL": 5})  # fmt: skip
    limits.opened("EXTERNAL", "10.0.0.1")
    assert limits.admit("EXTERNAL", "10.0.0.2") is Admission.WAIT
    assert limits.admit("INTERNAL", "10.0.0.3") is Admission.ACCEPT


def test_ip_overrides_parse_and_refuse_garbage():
    assert parse_ip_overrides("127.0.0.1:5, localhost:7") == {"127.0.0.1": 7}
    with pytest.raises(ConfigError, match="expected host:count"):
        parse_ip_overrides("127.0.0.1")


def _answered(sock: socket.socket, timeout: float) -> bool:
    sock.settimeout(timeout)
    sock.sendall(API_VERSIONS)
    try:
        return len(sock.recv(4)) == 4
    except TimeoutError:
        return False


def _eventually_answered(host: str, port: int, within_s: float = 5.0) -> bool:
    """A new connection answered once the broker has seen an old one close (it counts the close when
    it reads the end of that connection, a moment after the client closed it)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port)) as sock:
                if _answered(sock, 2):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            pass
        time.sleep(0.1)
    return False


def _closed(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        sock.sendall(API_VERSIONS)
        return sock.recv(4) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


@pytest.mark.slow
def test_one_past_the_per_ip_maximum_is_closed_and_one_past_the_broker_maximum_waits(tmp_path):
    node = start_broker_process(tmp_path / "a", overrides={"max.connections.per.ip": "2"})
    try:
        host, port = node.host, node.port
        first, second = (socket.create_connection((host, port)) for _ in range(2))
        assert _answered(first, 10) and _answered(second, 10)
        with socket.create_connection((host, port)) as third:
            assert _closed(third)
        second.close()
        assert _eventually_answered(host, port), "a freed slot takes a new connection"
        first.close()
    finally:
        node.stop()
    node = start_broker_process(tmp_path / "b", overrides={"max.connections": "2"})
    try:
        host, port = node.host, node.port
        first, second = (socket.create_connection((host, port)) for _ in range(2))
        assert _answered(first, 10) and _answered(second, 10)
        waiting = socket.create_connection((host, port))
        assert not _answered(waiting, 1.5), "the broker is full: the new connection waits"
        first.close()
        waiting.settimeout(10)
        assert len(waiting.recv(4)) == 4, "answered once a slot is free"
        waiting.close()
        second.close()
    finally:
        node.stop()
    assert "Traceback" not in "\n".join(node.output)
