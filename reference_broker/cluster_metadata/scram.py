"""The SCRAM credentials of the cluster image (Kafka's ``ScramImage``, built by ``ScramDelta``): per
mechanism, user -> salt, stored key, server key and iterations, from ``UserScramCredentialRecord`` and
``RemoveUserScramCredentialRecord``. The controller judges deletions against it, DescribeUserScram-
Credentials reads it (``describe``), and the SASL authenticator looks credentials up by mechanism name.

Passwords never reach the image: only what RFC 5802 lets a server keep."""

from __future__ import annotations

from dataclasses import dataclass, field

from kconform.codecs.errors import Errors
from kconform.codecs.metadata_records import RemoveUserScramCredentialRecord, UserScramCredentialRecord
from kconform.codecs.sasl import SCRAM_MECHANISMS

from ..java_hash_map import JavaHashMap

__all__ = ["DescribedUser", "ScramCredential", "ScramCredentials", "UnknownCredential"]

_DESCRIBED_TWICE = "Cannot describe SCRAM credentials for the same user twice in a single request: "
_NO_SUCH_USER = "Attempt to describe a user credential that does not exist: "


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What a server keeps of a password; the secrets stay out of the repr (and so out of logs)."""

    salt: bytes = field(repr=False)
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int


@dataclass(frozen=True, slots=True)
class DescribedUser:
    """One DescribeUserScramCredentials result: (mechanism id, iterations) pairs, or an error."""

    user: str
    error_code: int = Errors.NONE
    error_message: str | None = ""  # Kafka leaves the schema's default, "", on success
    credentials: tuple[tuple[int, int], ...] = ()


class UnknownCredential(LookupError):
    """A removal of a credential the image does not hold (Kafka's replay throws): the log is broken."""


class ScramCredentials:
    def __init__(self) -> None:
        # mechanism id -> user -> credential; users in the order their first credential came
        self._by_mechanism: dict[int, dict[str, ScramCredential]] = {}

    def __len__(self) -> int:
        return sum(len(users) for users in self._by_mechanism.values())

    def get(self, mechanism: int, user: str) -> ScramCredential | None:
        return self._by_mechanism.get(mechanism, {}).get(user)

    def lookup(self, sasl_name: str, user: str) -> ScramCredential | None:
        """The credential for a SASL mechanism name ("SCRAM-SHA-256"), as the authenticator asks."""
        mechanism = SCRAM_MECHANISMS.get(sasl_name)
        return None if mechanism is None else self.get(mechanism.type_id, user)

    # ---- replay -------------------------------------------------------------------------------

    def upsert(self, record: UserScramCredentialRecord) -> None:
        self._by_mechanism.setdefault(record.mechanism, {})[record.name] = ScramCredential(
            bytes(record.salt), bytes(record.stored_key), bytes(record.server_key), record.iterations
        )

    def remove(self, record: RemoveUserScramCredentialRecord) -> None:
        users = self._by_mechanism.get(record.mechanism, {})
        if users.pop(record.name, None) is None:
            raise UnknownCredential(
                f"RemoveUserScramCredentialRecord for {record.name!r} mechanism {record.mechanism}: "
                "no such credential"
            )
        if not users:
            del self._by_mechanism[record.mechanism]

    # ---- DescribeUserScramCredentials -----------------------------------------------------------

    def describe(self, users: list[str] | None) -> list[DescribedUser]:
        """``ScramImage.describe``: every user with a credential when ``users`` is null or empty; else
        each name once, DUPLICATE_RESOURCE for a name asked twice, RESOURCE_NOT_FOUND for a user with no
        credential. Results come in the order of Kafka's HashMap of names; a user's credentials in
        mechanism id order (Kafka's follow a HashMap keyed by an enum, whose order is not fixed)."""
        asked: JavaHashMap[bool] = JavaHashMap()  # name -> asked more than once
        if not users:
            for by_user in self._by_mechanism.values():
                for user in by_user:
                    asked.put(user, False)
        else:
            for user in users:
                asked.put(user, user in asked)
        results = []
        for user, repeated in asked.items():
            if repeated:
                results.append(DescribedUser(user, Errors.DUPLICATE_RESOURCE, _DESCRIBED_TWICE + user))
                continue
            found = tuple(
                (mechanism, by_user[user].iterations)
                for mechanism, by_user in sorted(self._by_mechanism.items())
                if user in by_user
            )
            if found:
                results.append(DescribedUser(user, credentials=found))
            else:
                results.append(DescribedUser(user, Errors.RESOURCE_NOT_FOUND, _NO_SUCH_USER + user))
        return results
