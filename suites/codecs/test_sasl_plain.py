"""SASL/PLAIN (kconform.codecs.sasl.plain) with the rules and texts of Kafka's ``PlainSaslServer``; kafka-
python's PLAIN token is read by our server; arbitrary bytes never raise anything but our errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs.sasl import (
    PlainClient,
    PlainServer,
    SaslAuthenticationError,
    SaslError,
    SaslIllegalStateError,
    client_for,
    password_check,
    server_for,
)
from kconform.codecs.sasl.plain import plain_token

CHECK = password_check({"alice": "alice-secret", "bob": "b\u00f6b"})


def refusal(token: bytes, check=CHECK) -> SaslAuthenticationError:
    server = PlainServer(check)
    with pytest.raises(SaslAuthenticationError) as refused:
        server.respond(token)
    assert not server.complete and server.authorization_id is None
    with pytest.raises(SaslIllegalStateError):
        server.respond(plain_token("alice", "alice-secret"))  # a failed exchange stays failed
    return refused.value


@pytest.mark.parametrize(
    "username, password, authzid",
    [("alice", "alice-secret", ""), ("alice", "alice-secret", "alice"), ("bob", "b\u00f6b", "")],
)
def test_good_credentials(username, password, authzid):
    server, client = (
        server_for("PLAIN", check=CHECK),
        client_for("PLAIN", username=username, password=password, authorization_id=authzid),
    )
    assert server.respond(client.initial()) == b""
    assert client.respond(b"") is None
    assert server.complete and client.complete and server.authorization_id == username
    assert server.credential_expiry_ms is None
    with pytest.raises(SaslIllegalStateError):
        server.respond(client_for("PLAIN", username=username, password=password).initial())


def test_the_token_is_authzid_nul_user_nul_password():
    assert PlainClient("u", "p", "a").initial() == b"a\x00u\x00p"
    assert PlainClient("u", "p").initial() == b"\x00u\x00p"


@pytest.mark.parametrize(
    "token, text",
    [
        (b"\x00alice\x00wrong", "Authentication failed: Invalid username or password"),
        (b"\x00mallory\x00alice-secret", "Authentication failed: Invalid username or password"),
        (b"\x00\x00pw", "Authentication failed: username not specified"),
        (b"\x00alice\x00", "Authentication failed: password not specified"),
        (
            b"bob\x00alice\x00alice-secret",
            "Authentication failed: Client requested an authorization id that is different from username",
        ),
        (b"", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"alice\x00alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        (b"\x00alice\x00alice-secret\x00", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (b"a\x00b\x00c\x00d\x00e\x00f", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    ],
)
def test_refusals_carry_kafkas_visible_text(token, text):
    error = refusal(token)
    assert not error.hidden  # PlainSaslServer throws SaslAuthenticationException: the client sees it
    assert error.message == error.error_message() == text


def test_a_failing_check_reads_as_could_not_be_verified():
    def broken(username: str, password: str) -> bool:
        raise OSError("the password file is gone")

    error = refusal(plain_token("alice", "alice-secret"), check=broken)
    assert error.message == "Authentication failed: credentials for user could not be verified"
    assert "password file" in error.reason


def test_the_password_check_is_exact():
    assert CHECK("alice", "alice-secret") and CHECK("bob", "b\u00f6b")
    assert not CHECK("alice", "alice-secret ") and not CHECK("carol", "") and not CHECK("bob", "bob")


@pytest.mark.peer
def test_kafka_python_plain_token_is_accepted():
    plain = pytest.importorskip("kafka.net.sasl.plain")
    peer = plain.SaslMechanismPlain(
        sasl_plain_username="alice", sasl_plain_password="alice-secret", security_protocol="SASL_SSL"
    )
    server = PlainServer(CHECK)
    assert server.respond(peer.auth_bytes()) == b""
    assert server.authorization_id == "alice"


def test_the_client_refuses_a_challenge_and_misuse():
    client = PlainClient("u", "p")
    with pytest.raises(SaslIllegalStateError):
        client.respond(b"")
    client.initial()
    with pytest.raises(SaslAuthenticationError):
        client.respond(b"more?")
    with pytest.raises(SaslIllegalStateError):
        client.initial()


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=100),
        st.lists(st.sampled_from([b"\x00", b"alice", b"alice-secret", b"\xff"])).map(b"".join),
    )
)
def test_arbitrary_bytes_raise_only_our_errors(token):
    server = PlainServer(CHECK)
    try:
        assert server.respond(token) == b""
    except SaslError:
        assert not server.complete
        return
    assert server.complete and token in (b"\x00alice\x00alice-secret", b"alice\x00alice\x00alice-secret")


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=40))
def test_the_client_refuses_any_non_empty_challenge(data):
    client = PlainClient("u", "p")
    client.initial()
    if data:
        with pytest.raises(SaslAuthenticationError):
            client.respond(data)
    else:
        assert client.respond(data) is None
