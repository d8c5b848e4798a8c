"""SASL/OAUTHBEARER (kconform.codecs.sasl.oauthbearer) with Kafka's unsecured tokens: the client initial
response grammar of ``OAuthBearerClientInitialResponse``, the checks of
``OAuthBearerUnsecuredValidatorCallbackHandler`` on a passed-in clock, the two-step failure of
``OAuthBearerSaslServer``, and KIP-368's session lifetime."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs.sasl import (
    OAuthBearerClient,
    OAuthBearerServer,
    SaslAuthenticationError,
    SaslError,
    SaslIllegalStateError,
    UnsecuredValidatorOptions,
    client_for,
    server_for,
    session_lifetime_ms,
    unsecured_token,
)
from kconform.codecs.sasl.oauthbearer import initial_response

NOW = 1_700_000_000_000
GENERIC = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"
)
INVALID = b'{"status":"invalid_token"}'


def part(document: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(document).encode()).rstrip(b"=").decode()


def jws(claims: dict, header: dict | None = None, signature: str = "") -> str:
    return f"{part(header or {'alg': 'none'})}.{part(claims)}.{signature}"


def claims(**extra) -> dict:
    return {"sub": "alice", "iat": NOW / 1000, "exp": NOW / 1000 + 60, **extra}


def server(now: int = NOW, **options) -> OAuthBearerServer:
    return OAuthBearerServer(lambda: now, UnsecuredValidatorOptions(**options))


def refused(token: str, now: int = NOW, expected: bytes = INVALID, **options) -> OAuthBearerServer:
    """The two steps: a JSON error to the token, then the failure when the client answers ^A."""
    broker = server(now, **options)
    client = OAuthBearerClient(token)
    answer = client.respond(broker.respond(client.initial()))
    assert client.server_error == expected.decode() and answer == b"\x01" and not broker.complete
    with pytest.raises(SaslAuthenticationError) as failure:
        broker.respond(answer)
    assert not failure.value.hidden and failure.value.error_message() == expected.decode()
    with pytest.raises(SaslIllegalStateError):
        broker.respond(client_for("OAUTHBEARER", token=unsecured_token("alice", now_ms=now)).initial())
    return broker


def test_a_good_token_logs_in_and_caps_the_session():
    token = unsecured_token("alice", now_ms=NOW, lifetime_seconds=3600, scope=("read", "write"))
    broker = server_for("OAUTHBEARER", now_ms=lambda: NOW + 1_000)
    client = client_for("OAUTHBEARER", token=token)
    assert broker.respond(client.initial()) == b""
    assert client.respond(b"") is None
    assert broker.complete and client.complete and broker.authorization_id == "alice"
    assert broker.credential_expiry_ms == NOW + 3_600_000
    assert session_lifetime_ms(broker.credential_expiry_ms, 600_000, now_ms=NOW + 1_000) == 600_000
    assert session_lifetime_ms(broker.credential_expiry_ms, None, now_ms=NOW + 1_000) == 3_599_000


def test_the_unsecured_token_is_made_as_kafka_makes_it():
    token = unsecured_token("alice", now_ms=NOW, lifetime_seconds=10, scope=("read",))
    header, payload, signature = token.split(".")
    assert signature == "" and "=" not in token
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "none"}
    assert json.loads(base64.urlsafe_b64decode(payload + "==")) == {
        "exp": NOW / 1000 + 10,
        "iat": NOW / 1000,
        "sub": "alice",
        "scope": ["read"],
    }


def test_the_initial_response_grammar():
    assert initial_response("t0k", "alice", {"ext": "v"}) == b"n,a=alice,\x01auth=Bearer t0k\x01ext=v\x01\x01"
    broker = server()
    assert broker.respond(initial_response(jws(claims()), "", {"traceId": "42"})) == b""
    assert broker.extensions == {"traceId": "42"}


def test_expired_and_early_tokens():
    broker = refused(jws(claims()), now=NOW + 60_000)
    assert broker.refusal_reason.startswith(
        "The indicated time (1700000060000 ms) minus allowable clock skew (0 ms)"
    )
    assert server(NOW + 60_000, allowable_clock_skew_ms=1).respond(initial_response(jws(claims()))) == b""
    broker = refused(jws(claims(iat=NOW / 1000 + 5)))
    assert "The Issued At value (1700000005.000000 seconds) was after" in broker.refusal_reason
    assert (
        server(allowable_clock_skew_ms=5_000).respond(initial_response(jws(claims(iat=NOW / 1000 + 5))))
        == b""
    )
    # only a clock skew lets a token reach the consistency check with exp before iat
    broker = refused(jws(claims(iat=NOW / 1000 + 10, exp=NOW / 1000 + 5)), allowable_clock_skew_ms=20_000)
    assert broker.refusal_reason.startswith("The Expiration Time time")


@pytest.mark.parametrize(
    "token, reason",
    [
        (jws({"iat": NOW / 1000, "exp": NOW / 1000 + 60}), "No principal name in JWT claim: sub"),
        (jws(claims(sub="  ")), "No principal name in JWT claim: sub"),
        (jws(claims(sub=7)), "The 'sub' claim was not of type String: Integer"),
        (jws({"sub": "alice"}), "No expiration time in JWT"),
        (jws(claims(exp="soon")), "The 'exp' claim was not of type Number: String"),
        (jws(claims(scope=3)), "The 'scope' claim was not of type List: Integer"),
        (jws(claims(), header={"alg": "HS256"}), "Unsecured JWS must have 'none' for an algorithm"),
        (jws(claims(), header={"typ": "JWT"}), "JWS header must have an Algorithm value"),
        (jws(claims(), signature="c2ln"), "Unsecured JWS must not contain a digital signature"),
        ("a.b", "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values"),
        ("a..b", "Malformed compact serialization contains '..'"),
        (f"{part({'alg': 'none'})}.bm90IGpzb24.", "malformed JSON"),
        # Kafka decodes with Java's basic Base64 decoder, so a base64url '_' or '-' is refused
        (jws(claims(sub="??>")), "malformed Base64 URL encoded value"),
    ],
)
def test_illegal_tokens_get_the_json_error_then_fail(token, reason):
    assert refused(token).refusal_reason == reason


def test_a_missing_required_scope_is_insufficient_scope():
    token = jws(claims(scope=["read"]))
    broker = refused(
        token,
        expected=b'{"status":"insufficient_scope", "scope":"[read, write]"}',
        required_scope=("read", "write"),
    )
    assert broker.refusal_reason.startswith(
        "The provided scope ([read]) was missing a required scope (write)."
    )
    assert server(required_scope=("read",)).respond(initial_response(token)) == b""
    assert server(required_scope=("read",)).respond(initial_response(jws(claims(scope=" read ")))) == b""


def test_options_from_jaas_and_a_custom_principal_claim():
    options = UnsecuredValidatorOptions.from_jaas(
        {"unsecuredValidatorPrincipalClaimName": " user ", "unsecuredValidatorRequiredScope": "a  b"}
    )
    assert options == UnsecuredValidatorOptions("user", "scope", ("a", "b"), 0)
    assert UnsecuredValidatorOptions.from_jaas({}) == UnsecuredValidatorOptions()
    with pytest.raises(ValueError, match="Invalid scope value"):
        UnsecuredValidatorOptions.from_jaas({"unsecuredValidatorRequiredScope": 'a "b"'})
    with pytest.raises(ValueError, match="must not be negative"):
        UnsecuredValidatorOptions.from_jaas({"unsecuredValidatorAllowableClockSkewMs": "-1"})
    broker = server(principal_claim="user")
    assert broker.respond(initial_response(jws(claims(user="bob")))) == b""
    assert broker.authorization_id == "bob"


def test_after_a_json_error_a_new_token_starts_over():
    broker = server()
    assert broker.respond(initial_response(jws(claims(exp=1)))) == INVALID
    assert broker.respond(initial_response(jws(claims()))) == b""
    assert broker.complete


def test_a_different_authorization_id_is_refused_with_kafkas_visible_text():
    with pytest.raises(SaslAuthenticationError) as failure:
        server().respond(initial_response(jws(claims()), "bob"))
    assert failure.value.error_message() == (
        "Authentication failed: Client requested an authorization id (bob) that is different from the "
        "token's principal name (alice)"
    )
    assert server().respond(initial_response(jws(claims()), "alice")) == b""


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"", "Invalid OAUTHBEARER client first message"),
        (b"\x01", "Invalid OAUTHBEARER client first message"),  # ^A with no error pending
        (b"n,,\x01auth=Bearer abc\x01", "Invalid OAUTHBEARER client first message"),
        (b"y,,\x01auth=Bearer abc\x01\x01", "Invalid OAUTHBEARER client first message"),
        (b"n,,\x01\x01", "Invalid OAUTHBEARER client first message: 'auth' not specified"),
        (b"n,,\x01x=y\x01\x01", "Invalid OAUTHBEARER client first message: 'auth' not specified"),
        (b"n,,\x01auth=Bearer\x01\x01", "Invalid OAUTHBEARER client first message: invalid 'auth' format"),
        (
            b"n,,\x01auth=Bearer a b\x01\x01",
            "Invalid OAUTHBEARER client first message: invalid 'auth' format",
        ),
        (b"n,,\x01auth=Basic abc\x01\x01", "Invalid scheme in OAUTHBEARER client first message: Basic"),
    ],
)
def test_malformed_initial_responses_are_hidden_failures(data, reason):
    broker = server()
    with pytest.raises(SaslAuthenticationError) as failure:
        broker.respond(data)
    assert failure.value.hidden and failure.value.reason == reason
    assert failure.value.error_message() == GENERIC
    with pytest.raises(SaslIllegalStateError):
        broker.respond(initial_response(jws(claims())))


def test_the_scheme_is_case_insensitive():
    assert server().respond(f"n,,\x01auth=bEaReR {jws(claims())}\x01\x01".encode()) == b""


def test_client_misuse_is_an_illegal_state():
    client = OAuthBearerClient("t")
    with pytest.raises(SaslIllegalStateError):
        client.respond(b"")
    client.initial()
    client.respond(INVALID)
    with pytest.raises(SaslIllegalStateError):
        client.respond(b"")


@pytest.mark.parametrize(
    "expiry, max_reauth, expected",
    [
        (None, None, 0),
        (None, 0, 0),
        (None, 5_000, 5_000),
        (NOW + 9_000, None, 9_000),
        (NOW + 9_000, 5_000, 5_000),
        (NOW - 1, None, 0),
        (NOW - 1, 5_000, 0),
    ],
)
def test_session_lifetime(expiry, max_reauth, expected):
    assert session_lifetime_ms(expiry, max_reauth, now_ms=NOW) == expected


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["sub", "exp", "iat", "scope", "alg"]), inner, max_size=4)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=120),
        JSONISH.map(lambda c: initial_response(jws(c) if isinstance(c, dict) else str(c))),
    )
)
def test_arbitrary_bytes_raise_only_our_errors(data):
    broker = server()
    try:
        reply = broker.respond(data)
    except SaslError:
        return
    assert reply == b"" and broker.complete or reply.startswith(b'{"status":"') and not broker.complete


@settings(max_examples=300, deadline=None)
@given(JSONISH, JSONISH)
def test_arbitrary_claims_and_headers_never_crash_the_validator(payload, header):
    token = jws(
        payload if isinstance(payload, dict) else {"x": payload}, header if isinstance(header, dict) else None
    )
    broker = server()
    reply = broker.respond(initial_response(token))
    assert reply == b"" and broker.authorization_id or reply == INVALID


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=60))
def test_arbitrary_bytes_after_a_json_error_raise_only_our_errors(data):
    broker = server()
    assert broker.respond(initial_response(jws(claims(exp=1)))) == INVALID
    try:
        reply = broker.respond(data)
    except SaslAuthenticationError as failure:
        assert data != b"\x01" or failure.error_message() == INVALID.decode()
        return
    except SaslError:
        return
    assert data != b"\x01" and (reply == INVALID or broker.complete)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=60))
def test_the_client_answers_any_challenge_with_control_a_or_completes(data):
    client = OAuthBearerClient(unsecured_token("alice", now_ms=NOW))
    client.initial()
    assert client.respond(data) == (b"\x01" if data else None)
    assert client.complete == (not data)


@pytest.mark.peer
def test_aiokafka_initial_response_is_accepted():
    conn = pytest.importorskip("aiokafka.conn")

    class Provider:
        async def token(self) -> str:
            return unsecured_token("alice", now_ms=NOW)

        def extensions(self) -> dict[str, str]:
            return {"traceId": "7"}

    async def first_step() -> bytes:
        step = await conn.OAuthAuthenticator(sasl_oauth_token_provider=Provider()).step(None)
        return step[0]

    broker = server()
    assert broker.respond(asyncio.run(first_step())) == b""
    assert broker.authorization_id == "alice" and broker.extensions == {"traceId": "7"}
