"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), both sides, as Kafka's ``ScramSaslServer`` and
``ScramSaslClient`` run them: client-first, server-first, client-final, server-final.

Kafka raises most server failures as a plain ``SaslException``, so the client learns only the generic
text: an unknown user (refused at client-first) and a wrong password (refused at client-final) read the
same. Those are ``SaslAuthenticationError.hiding(...)`` here."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass

from ._errors import SaslAuthenticationError, SaslIllegalStateError
from ._scram_formatter import (
    SCRAM_MECHANISMS,
    ScramCredential,
    ScramMechanism,
    random_nonce,
    salted_password,
    sasl_name,
    username_of,
)
from ._scram_messages import (
    ClientFinal,
    ClientFirst,
    ServerFinal,
    ServerFirst,
    parse_client_final,
    parse_client_first,
    parse_server_final,
    parse_server_first,
)

__all__ = ["DelegationTokenCredential", "ScramClient", "ScramServer", "scram_mechanism"]

TOKEN_AUTH = "tokenauth"  # the one extension Kafka's server understands (ScramLoginModule)


def scram_mechanism(mechanism: str | ScramMechanism) -> ScramMechanism:
    if isinstance(mechanism, ScramMechanism):
        return mechanism
    found = SCRAM_MECHANISMS.get(mechanism)
    if found is None:
        raise ValueError(f"{mechanism!r} is not a SCRAM mechanism; known: {sorted(SCRAM_MECHANISMS)}")
    return found


@dataclass(frozen=True)
class DelegationTokenCredential:
    """What the broker's token cache gives for a token id: its owner, its SCRAM credential, its expiry."""

    owner: str
    credential: ScramCredential
    expiry_ms: int | None = None


def _auth_message(first: ClientFirst, server_first: ServerFirst, final: ClientFinal) -> bytes:
    return f"{first.bare()},{server_first.text()},{final.without_proof()}".encode()


def _xor(left: bytes, right: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(left, right, strict=True))


class ScramServer:
    """The broker side. ``credential(username)`` looks a user up (``None``: no such user);
    ``token_credential(token_id)`` does the same for ``tokenauth=true`` (absent: the broker holds no
    delegation tokens, and Kafka refuses such a login). ``nonce()`` makes the server's nonce."""

    def __init__(
        self,
        mechanism: str | ScramMechanism,
        credential: Callable[[str], ScramCredential | None],
        *,
        token_credential: Callable[[str], DelegationTokenCredential | None] | None = None,
        nonce: Callable[[], str] = random_nonce,
    ) -> None:
        self._scram = scram_mechanism(mechanism)
        self.mechanism = self._scram.name
        self._credential_of = credential
        self._token_credential_of = token_credential
        self._nonce = nonce
        self._state = "RECEIVE_CLIENT_FIRST_MESSAGE"
        self._principal: str | None = None
        self._credential: ScramCredential | None = None
        self._exchange: tuple[ClientFirst, ServerFirst] | None = None
        self.credential_expiry_ms: int | None = None  # a delegation token's expiry (KIP-368)
        self.extensions: dict[str, str] = {}

    @property
    def complete(self) -> bool:
        return self._state == "COMPLETE"

    @property
    def authorization_id(self) -> str | None:
        """The principal name once complete: the user, or the owner of a delegation token."""
        return self._principal if self.complete else None

    def respond(self, token: bytes) -> bytes:
        text = bytes(token).decode("utf-8", "replace")
        try:
            if self._state == "RECEIVE_CLIENT_FIRST_MESSAGE":
                reply = self._server_first(text)
                self._state = "RECEIVE_CLIENT_FINAL_MESSAGE"
            elif self._state == "RECEIVE_CLIENT_FINAL_MESSAGE":
                reply = self._server_final(text)
                self._state = "COMPLETE"
            else:
                raise SaslIllegalStateError(f"Unexpected challenge in Sasl server state {self._state}")
        except SaslAuthenticationError:
            self._state = "FAILED"
            raise
        finally:
            if self._state != "RECEIVE_CLIENT_FINAL_MESSAGE":
                self._credential = self._exchange = None  # nothing secret outlives the exchange
        return reply

    def _fail(self, reason: str) -> SaslAuthenticationError:
        return SaslAuthenticationError.hiding(self.mechanism, reason)

    def _server_first(self, text: str) -> bytes:
        first = parse_client_first(text)
        if first is None:
            raise self._fail(f"Invalid SCRAM client first message format: {text}")
        self.extensions = dict(first.extensions)
        server_nonce = self._nonce()
        try:
            username = username_of(first.sasl_name)
            if self.extensions.get(TOKEN_AUTH, "").lower() == "true":
                credential = self._token_login(username)
            else:
                credential, self._principal = self._credential_of(username), username
        except SaslAuthenticationError:
            raise
        except Exception as error:  # a failing lookup is Kafka's "could not be obtained"
            raise self._fail("Authentication failed: Credentials could not be obtained") from error
        if credential is None:
            raise self._fail("Authentication failed: Invalid user credentials")
        if first.authorization_id and first.authorization_id != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        if credential.iterations < self._scram.min_iterations:
            raise self._fail(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{self._scram.min_iterations} for {self._scram.kafka_name}"
            )
        server_first = ServerFirst(first.nonce + server_nonce, bytes(credential.salt), credential.iterations)
        self._credential, self._exchange = credential, (first, server_first)
        return server_first.text().encode()

    def _token_login(self, token_id: str) -> ScramCredential | None:
        token = None if self._token_credential_of is None else self._token_credential_of(token_id)
        if token is None or not token.owner:
            raise self._fail(f"Token Authentication failed: Invalid tokenId : {token_id}")
        self._principal, self.credential_expiry_ms = token.owner, token.expiry_ms
        return token.credential

    def _server_final(self, text: str) -> bytes:
        assert self._credential is not None and self._exchange is not None
        first, server_first = self._exchange
        final = parse_client_final(text)
        if final is None:
            raise self._fail(f"Invalid SCRAM client final message format: {text}")
        # Kafka checks endsWith, not equality, and never looks at the channel binding itself: the
        # binding and the nonce are both inside the signed auth message, so a changed one fails the proof
        if not final.nonce.endswith(server_first.nonce):
            raise self._fail("Invalid client nonce in the final client message.")
        auth_message = _auth_message(first, server_first, final)
        stored_key = bytes(self._credential.stored_key)
        signature = self._scram.hmac(stored_key, auth_message)
        if len(final.proof) != len(signature):  # Kafka's xor throws here; it is a wrong proof all the same
            raise self._fail("Invalid client credentials: proof of the wrong length")
        if not hmac.compare_digest(self._scram.hash(_xor(signature, final.proof)), stored_key):
            raise self._fail("Invalid client credentials")
        server_signature = self._scram.hmac(bytes(self._credential.server_key), auth_message)
        return ServerFinal(None, server_signature).to_bytes()


class ScramClient:
    """The client side. ``initial()`` is client-first; ``respond(server_first)`` is client-final;
    ``respond(server_final)`` checks the server's signature and returns ``None``.

    ``max_iterations`` bounds the work a server can ask for (Kafka's client has no bound; Kafka's
    brokers never store more than the mechanism's maximum)."""

    def __init__(
        self,
        mechanism: str | ScramMechanism,
        username: str,
        password: str,
        *,
        extensions: dict[str, str] | None = None,
        nonce: Callable[[], str] = random_nonce,
        max_iterations: int | None = None,
    ) -> None:
        self._scram = scram_mechanism(mechanism)
        self.mechanism = self._scram.name
        self._password = password
        self._first = ClientFirst(sasl_name(username), nonce(), "", tuple((extensions or {}).items()))
        self._max_iterations = self._scram.max_iterations if max_iterations is None else max_iterations
        self._state = "SEND_CLIENT_FIRST_MESSAGE"
        self._expected_signature = b""

    @property
    def complete(self) -> bool:
        return self._state == "COMPLETE"

    def initial(self) -> bytes:
        if self._state != "SEND_CLIENT_FIRST_MESSAGE":
            raise SaslIllegalStateError(f"Unexpected challenge in Sasl client state {self._state}")
        self._state = "RECEIVE_SERVER_FIRST_MESSAGE"
        return self._first.to_bytes()

    def respond(self, challenge: bytes) -> bytes | None:
        text = bytes(challenge).decode("utf-8", "replace")
        try:
            if self._state == "RECEIVE_SERVER_FIRST_MESSAGE":
                reply: bytes | None = self._client_final(text)
                self._state = "RECEIVE_SERVER_FINAL_MESSAGE"
            elif self._state == "RECEIVE_SERVER_FINAL_MESSAGE":
                reply = self._check_server_final(text)
                self._state = "COMPLETE"
            else:
                raise SaslIllegalStateError(f"Unexpected challenge in Sasl client state {self._state}")
        except SaslAuthenticationError:
            self._state = "FAILED"
            raise
        return reply

    def _client_final(self, text: str) -> bytes:
        server_first = parse_server_first(text)
        if server_first is None:
            raise SaslAuthenticationError(f"Invalid SCRAM server first message format: {text}")
        if not server_first.nonce.startswith(self._first.nonce):
            raise SaslAuthenticationError("Invalid server nonce: does not start with client nonce")
        rounds = server_first.iterations
        if rounds < self._scram.min_iterations:
            raise SaslAuthenticationError(
                f"Requested iterations {rounds} is less than the minimum "
                f"{self._scram.min_iterations} for {self._scram.kafka_name}"
            )
        if rounds > self._max_iterations:
            raise SaslAuthenticationError(
                f"Requested iterations {rounds} is more than {self._max_iterations}"
            )
        salted = salted_password(self._scram, self._password, server_first.salt, rounds)
        client_key = self._scram.hmac(salted, b"Client Key")
        unsigned = ClientFinal(b"n,,", server_first.nonce)
        auth_message = _auth_message(self._first, server_first, unsigned)
        signature = self._scram.hmac(self._scram.hash(client_key), auth_message)
        self._expected_signature = self._scram.hmac(self._scram.hmac(salted, b"Server Key"), auth_message)
        return ClientFinal(b"n,,", server_first.nonce, _xor(client_key, signature)).to_bytes()

    def _check_server_final(self, text: str) -> None:
        server_final = parse_server_final(text)
        if server_final is None:
            raise SaslAuthenticationError(f"Invalid SCRAM server final message format: {text}")
        if server_final.error is not None:
            raise SaslAuthenticationError(
                f"Sasl authentication using {self._scram.kafka_name} failed with error: {server_final.error}"
            )
        if not hmac.compare_digest(server_final.signature or b"", self._expected_signature):
            raise SaslAuthenticationError("Invalid server signature in server final message")
        return None
