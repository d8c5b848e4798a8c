"""SCRAM-SHA-256/512 (kconform.codecs.sasl.scram): RFC 7677's published exchange byte for byte, our client
against our server, kafka-python's client against our server, and the failures Kafka's ``ScramSaslServer``
and ``ScramSaslClient`` raise, with the texts the client gets."""

from __future__ import annotations

import asyncio
import base64
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs.sasl import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    DelegationTokenCredential,
    SaslAuthenticationError,
    SaslError,
    SaslIllegalStateError,
    ScramClient,
    ScramServer,
    client_for,
    credential_from_string,
    credential_to_string,
    derive_credential,
    random_nonce,
    sasl_name,
    server_for,
    username_of,
)

# RFC 7677 section 3
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
GENERIC_256 = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
)

RFC_CREDENTIAL = derive_credential(SCRAM_SHA_256, "pencil", salt=RFC_SALT, iterations=4096)
CREDENTIALS = {
    "SCRAM-SHA-256": {"user": RFC_CREDENTIAL, "a=b,c": derive_credential(SCRAM_SHA_256, "pw")},
    "SCRAM-SHA-512": {"user": derive_credential(SCRAM_SHA_512, "pencil")},
}


def rfc_server() -> ScramServer:
    return ScramServer("SCRAM-SHA-256", {"user": RFC_CREDENTIAL}.get, nonce=lambda: RFC_SERVER_NONCE)


def exchange(client, server) -> None:
    """Drive a client and a server against each other in memory until the client is done."""
    reply = client.respond(server.respond(client.initial()))
    assert client.respond(server.respond(reply)) is None


def test_rfc_7677_server_side():
    server = rfc_server()
    assert server.respond(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert not server.complete and server.authorization_id is None
    assert server.respond(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete and server.authorization_id == "user"
    assert server.credential_expiry_ms is None


def test_rfc_7677_client_side():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    assert client.initial() == RFC_CLIENT_FIRST
    assert client.respond(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert not client.complete
    assert client.respond(RFC_SERVER_FINAL) is None
    assert client.complete


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_our_client_against_our_server(mechanism):
    server = server_for(mechanism, credential=CREDENTIALS[mechanism].get)
    client = client_for(mechanism, username="user", password="pencil")
    exchange(client, server)
    assert client.complete and server.complete and server.authorization_id == "user"


def test_sha_512_keys_are_sha_512_sized():
    credential = CREDENTIALS["SCRAM-SHA-512"]["user"]
    assert len(credential.stored_key) == len(credential.server_key) == 64
    assert credential.iterations == SCRAM_SHA_512.min_iterations == 4096


def test_usernames_with_comma_and_equals_travel_escaped():
    client = ScramClient("SCRAM-SHA-256", "a=b,c", "pw", nonce=lambda: "n0nce")
    assert client.initial() == b"n,,n=a=3Db=2Cc,r=n0nce"
    server = ScramServer("SCRAM-SHA-256", CREDENTIALS["SCRAM-SHA-256"].get)
    client = ScramClient("SCRAM-SHA-256", "a=b,c", "pw")
    exchange(client, server)
    assert server.authorization_id == "a=b,c"


@given(st.text())
def test_sasl_name_round_trips(username):
    escaped = sasl_name(username)
    assert "," not in escaped
    assert username_of(escaped) == username


@pytest.mark.parametrize("name", ["a=", "a=2", "a=41", "=3"])
def test_a_stray_equals_is_an_invalid_username(name):
    with pytest.raises(ValueError, match="Invalid username"):
        username_of(name)


@pytest.mark.peer
def test_kafka_python_client_against_our_server():
    scram = pytest.importorskip("kafka.net.sasl.scram")
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        peer = scram.ScramClient("user", "pencil", mechanism)
        server = server_for(mechanism, credential=CREDENTIALS[mechanism].get)
        peer.process_server_first_message(server.respond(peer.first_message()))
        peer.process_server_final_message(server.respond(peer.final_message()))  # raises on a bad signature
        assert server.complete and server.authorization_id == "user"


@pytest.mark.peer
def test_kafka_python_client_with_a_wrong_password_is_refused():
    scram = pytest.importorskip("kafka.net.sasl.scram")
    peer = scram.ScramClient("user", "pencil!", "SCRAM-SHA-256")
    server = server_for("SCRAM-SHA-256", credential=CREDENTIALS["SCRAM-SHA-256"].get)
    peer.process_server_first_message(server.respond(peer.first_message()))
    with pytest.raises(SaslAuthenticationError) as refused:
        server.respond(peer.final_message())
    assert refused.value.error_message() == GENERIC_256


def failure_at_final(password: str = "pencil", tamper=lambda final: final) -> SaslAuthenticationError:
    server = ScramServer("SCRAM-SHA-256", CREDENTIALS["SCRAM-SHA-256"].get)
    client = ScramClient("SCRAM-SHA-256", "user", password)
    final = client.respond(server.respond(client.initial()))
    with pytest.raises(SaslAuthenticationError) as refused:
        server.respond(tamper(final))
    with pytest.raises(SaslIllegalStateError, match="state FAILED"):
        server.respond(final)
    assert not server.complete and server.authorization_id is None
    return refused.value


def test_unknown_user_and_wrong_password_read_the_same_to_the_client():
    """ScramSaslServer raises both as a plain SaslException; SaslServerAuthenticator hides the reason."""
    wrong_password = failure_at_final(password="pencil?")
    server = ScramServer("SCRAM-SHA-256", CREDENTIALS["SCRAM-SHA-256"].get)
    with pytest.raises(SaslAuthenticationError) as unknown:
        server.respond(ScramClient("SCRAM-SHA-256", "nobody", "pencil").initial())
    assert wrong_password.hidden and unknown.value.hidden
    assert wrong_password.error_message() == unknown.value.error_message() == GENERIC_256
    assert wrong_password.message == unknown.value.message == GENERIC_256
    assert wrong_password.reason == "Invalid client credentials"
    assert unknown.value.reason == "Authentication failed: Invalid user credentials"
    assert unknown.value.error_message(reauthenticating=True) == GENERIC_256.replace(
        "during authentication", "during re-authentication"
    )


def test_a_tampered_nonce_is_refused():
    error = failure_at_final(tamper=lambda final: final.replace(b",r=", b",r=x", 1))
    assert (
        error.reason == "Invalid client credentials"
    )  # a prefix passes Kafka's endsWith; the proof does not
    error = failure_at_final(tamper=lambda final: final.replace(b",p=", b"Z,p=", 1))
    assert error.reason == "Invalid client nonce in the final client message."
    assert error.error_message() == GENERIC_256


def test_a_bad_proof_or_channel_binding_is_refused():
    def flip_proof(final: bytes) -> bytes:
        head, proof = final.rsplit(b",p=", 1)
        raw = bytearray(base64.b64decode(proof))
        raw[0] ^= 1
        return head + b",p=" + base64.b64encode(bytes(raw))

    assert failure_at_final(tamper=flip_proof).reason == "Invalid client credentials"
    short = failure_at_final(tamper=lambda final: final.rsplit(b",p=", 1)[0] + b",p=AAAA")
    assert short.hidden and short.reason.startswith("Invalid client credentials")
    # Kafka never compares c= with "biws" itself: the binding is signed, so another one fails the proof
    assert (
        failure_at_final(tamper=lambda f: f.replace(b"c=biws", b"c=eSws")).reason
        == "Invalid client credentials"
    )


def test_malformed_client_final_is_refused():
    error = failure_at_final(tamper=lambda final: b"c=biws,r=,p=")
    assert error.reason.startswith("Invalid SCRAM client final message format")


def test_a_different_authorization_id_is_refused_with_kafkas_visible_text():
    server = ScramServer("SCRAM-SHA-256", CREDENTIALS["SCRAM-SHA-256"].get)
    with pytest.raises(SaslAuthenticationError) as refused:
        server.respond(b"n,a=admin,n=user,r=abc")
    assert not refused.value.hidden
    assert refused.value.error_message() == (
        "Authentication failed: Client requested an authorization id that is different from username"
    )
    server = ScramServer("SCRAM-SHA-256", CREDENTIALS["SCRAM-SHA-256"].get)
    assert server.respond(b"n,a=user,n=user,r=abc").startswith(b"r=abc")  # the same id is fine


def test_too_few_iterations_fail_on_both_sides():
    weak = derive_credential(SCRAM_SHA_256, "pencil", iterations=4095)
    with pytest.raises(SaslAuthenticationError) as refused:
        ScramServer("SCRAM-SHA-256", {"user": weak}.get).respond(b"n,,n=user,r=abc")
    assert refused.value.reason == "Iterations 4095 is less than the minimum 4096 for SCRAM_SHA_256"
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=lambda: "abc")
    client.initial()
    with pytest.raises(
        SaslAuthenticationError, match="Requested iterations 4095 is less than the minimum 4096"
    ):
        client.respond(b"r=abcdef,s=QUJD,i=4095")
    greedy = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=lambda: "abc")
    greedy.initial()
    with pytest.raises(SaslAuthenticationError, match="Requested iterations 2147483647 is more than 16384"):
        greedy.respond(b"r=abcdef,s=QUJD,i=2147483647")  # refused before any hashing, so no hang


def test_the_client_checks_the_server():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    client.initial()
    with pytest.raises(
        SaslAuthenticationError, match="Invalid server nonce: does not start with client nonce"
    ):
        client.respond(RFC_SERVER_FIRST.replace(b"r=rOpr", b"r=XOpr"))
    for final, text in [
        (RFC_SERVER_FINAL.replace(b"v=6", b"v=7"), "Invalid server signature in server final message"),
        (b"e=invalid-proof", "Sasl authentication using SCRAM_SHA_256 failed with error: invalid-proof"),
    ]:
        client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
        client.initial()
        client.respond(RFC_SERVER_FIRST)
        with pytest.raises(SaslAuthenticationError) as refused:
            client.respond(final)
        assert refused.value.message == text and not client.complete
        with pytest.raises(SaslIllegalStateError, match="state FAILED"):
            client.respond(RFC_SERVER_FINAL)


def test_misuse_of_a_finished_exchange_is_an_illegal_state():
    server, client = rfc_server(), ScramClient("SCRAM-SHA-256", "user", "pencil")
    exchange(client, server)
    with pytest.raises(SaslIllegalStateError, match="Unexpected challenge in Sasl server state COMPLETE"):
        server.respond(RFC_CLIENT_FIRST)
    with pytest.raises(SaslIllegalStateError, match="Sasl client state COMPLETE"):
        client.respond(b"")
    with pytest.raises(SaslIllegalStateError):
        client.initial()


def test_tokenauth_without_delegation_tokens_is_refused():
    server = ScramServer("SCRAM-SHA-256", CREDENTIALS["SCRAM-SHA-256"].get)
    with pytest.raises(SaslAuthenticationError) as refused:
        server.respond(b"n,,n=user,r=abc,tokenauth=true")
    assert refused.value.reason == "Token Authentication failed: Invalid tokenId : user"
    assert refused.value.error_message() == GENERIC_256


def test_tokenauth_logs_in_as_the_token_owner_until_it_expires():
    token = DelegationTokenCredential("alice", derive_credential(SCRAM_SHA_256, "hmac"), expiry_ms=5_000)
    server = ScramServer("SCRAM-SHA-256", {}.get, token_credential={"token-1": token}.get)
    client = ScramClient("SCRAM-SHA-256", "token-1", "hmac", extensions={"tokenauth": "TRUE"})
    exchange(client, server)
    assert server.authorization_id == "alice" and server.credential_expiry_ms == 5_000
    assert server.extensions == {"tokenauth": "TRUE"}


def test_nonces_come_from_the_given_source():
    first = random_nonce(random.Random(7).randbytes)
    assert first == random_nonce(random.Random(7).randbytes) != random_nonce(random.Random(8).randbytes)
    assert set(first) <= set("0123456789abcdefghijklmnopqrstuvwxyz") and len(first) <= 26
    assert random_nonce(lambda n: b"\x00" * n) == "0"
    assert int(random_nonce(lambda n: b"\xff" * n), 36) == 2**130 - 1


def test_credentials_as_kafka_writes_them():
    text = credential_to_string(RFC_CREDENTIAL)
    assert text.startswith("salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=") and text.endswith(",iterations=4096")
    assert credential_from_string(text) == RFC_CREDENTIAL
    for bad in ["", "salt=AA==", text + ",extra=1", text.replace("iterations=4096", "iterations=x")]:
        with pytest.raises(ValueError, match="Credentials not valid"):
            credential_from_string(bad)


GARBAGE = st.one_of(
    st.binary(max_size=200),
    st.text(alphabet=st.sampled_from("nacmrspiv=,+/0AZaz\x00\x01\x7f\u00e9"), max_size=80).map(str.encode),
)


@settings(max_examples=300, deadline=None)
@given(GARBAGE)
def test_garbage_client_first_raises_only_sasl_errors(data):
    server = ScramServer("SCRAM-SHA-256", CREDENTIALS["SCRAM-SHA-256"].get)
    try:
        reply = server.respond(data)
    except SaslError:
        return
    assert reply.startswith(b"r=")


@settings(max_examples=200, deadline=None)
@given(GARBAGE)
def test_garbage_client_final_raises_only_sasl_errors(data):
    server = rfc_server()
    server.respond(RFC_CLIENT_FIRST)
    with pytest.raises(SaslError):
        server.respond(data)


@settings(max_examples=200, deadline=None)
@given(GARBAGE, GARBAGE)
def test_garbage_from_the_server_raises_only_sasl_errors(server_first, server_final):
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=lambda: "r")
    client.initial()
    try:
        client.respond(server_first)
        client.respond(server_final)
    except SaslError:
        return
    raise AssertionError(f"the client accepted {server_first!r} then {server_final!r}")


@pytest.mark.peer
@pytest.mark.parametrize("username", ["user", "a=b,c"])
def test_aiokafka_client_against_our_server(username):
    """aiokafka escapes the username as RFC 5802 asks; its public ``step`` runs in an executor."""
    conn = pytest.importorskip("aiokafka.conn")
    password = "pencil" if username == "user" else "pw"

    async def run() -> ScramServer:
        peer = conn.ScramAuthenticator(
            loop=asyncio.get_running_loop(),
            sasl_plain_username=username,
            sasl_plain_password=password,
            sasl_mechanism="SCRAM-SHA-256",
        )
        server = ScramServer("SCRAM-SHA-256", CREDENTIALS["SCRAM-SHA-256"].get)
        reply = None  # aiokafka's generator starts on None
        while (step := await peer.step(reply)) is not None:
            reply = server.respond(step[0])
        return server

    server = asyncio.run(run())
    assert server.complete and server.authorization_id == username
