"""The controller's half of AlterUserScramCredentials, a pure function of the image's credentials
(Kafka's ``ScramControlManager.alterCredentials``).

A user may be altered once per request, whatever the mechanism: a name met again, among the deletions
or the upsertions, loses what it had and gets DUPLICATE_RESOURCE; once a name has an error, later
mentions are passed over. Each deletion and upsertion is checked in Kafka's order: an empty name is
UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM; then a deletion of a
credential the image does not hold is RESOURCE_NOT_FOUND and an upsertion's iterations must lie within
the mechanism's minimum and 16384 (UNACCEPTABLE_CREDENTIAL). The records of every alteration that
passed are written as one batch; an upsertion's record carries the stored key and server key derived
from the salted password (``ScramFormatter``), never the salted password itself.

Results come in Kafka's order: deletions, then upsertions that passed, then errors, each group in the
iteration order of the HashMap Kafka keeps it in. Kafka refuses every alteration with
UNSUPPORTED_VERSION below metadata.version 3.5-IV2; this cluster writes records of later versions
only, so that check never fires here."""

from __future__ import annotations

from dataclasses import dataclass

from kconform.codecs.errors import Errors
from kconform.codecs.messages import AlterUserScramCredentialsResponse
from kconform.codecs.metadata_records import RemoveUserScramCredentialRecord, UserScramCredentialRecord
from kconform.codecs.sasl import SCRAM_MECHANISMS

from ..cluster_metadata.scram import ScramCredentials
from ..java_hash_map import JavaHashMap

_BY_TYPE = {m.type_id: m for m in SCRAM_MECHANISMS.values()}  # the id the wire and records carry

__all__ = ["ScramError", "alter_credentials"]

Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
_TWICE = "A user credential cannot be altered twice in the same request"


@dataclass(frozen=True, slots=True)
class ScramError:
    code: int
    message: str


def _name_and_mechanism_error(name: str, mechanism: int) -> ScramError | None:
    """``validateScramUsernameAndMechanism``."""
    if not name:
        return ScramError(Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    if _BY_TYPE.get(mechanism) is None:
        return ScramError(Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    return None


def _deletion_error(credentials: ScramCredentials, deletion) -> ScramError | None:
    error = _name_and_mechanism_error(deletion.name, deletion.mechanism)
    if error is None and credentials.get(deletion.mechanism, deletion.name) is None:
        error = ScramError(
            Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        )
    return error


def _upsertion_error(upsertion) -> ScramError | None:
    error = _name_and_mechanism_error(upsertion.name, upsertion.mechanism)
    if error is not None:
        return error
    if upsertion.iterations < _BY_TYPE[upsertion.mechanism].min_iterations:
        return ScramError(Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
    if upsertion.iterations > _BY_TYPE[upsertion.mechanism].max_iterations:
        return ScramError(Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    return None


def credential_record(upsertion) -> UserScramCredentialRecord:
    """``finishUpsertion``: the record that stores an upsertion, its keys derived as RFC 5802 says."""
    mechanism = _BY_TYPE[upsertion.mechanism]
    salted = bytes(upsertion.salted_password)
    return UserScramCredentialRecord(
        name=upsertion.name,
        mechanism=upsertion.mechanism,
        salt=bytes(upsertion.salt),
        stored_key=mechanism.hash(mechanism.hmac(salted, b"Client Key")),
        server_key=mechanism.hmac(salted, b"Server Key"),
        iterations=upsertion.iterations,
    )


def alter_credentials(credentials: ScramCredentials, request) -> tuple[list, list[Result]]:
    """The records to write and the per-user results of one AlterUserScramCredentials request."""
    deletions: JavaHashMap = JavaHashMap()
    upsertions: JavaHashMap = JavaHashMap()
    errors: JavaHashMap[ScramError] = JavaHashMap()
    for deletion in request.deletions:
        name = deletion.name
        if name in errors:
            continue
        if deletions.pop(name) is not None:
            errors.put(name, ScramError(Errors.DUPLICATE_RESOURCE, _TWICE))
        elif (error := _deletion_error(credentials, deletion)) is not None:
            errors.put(name, error)
        else:
            deletions.put(name, deletion)
    for upsertion in request.upsertions:
        name = upsertion.name
        if name in errors:
            continue
        if deletions.pop(name) is not None or upsertions.pop(name) is not None:
            errors.put(name, ScramError(Errors.DUPLICATE_RESOURCE, _TWICE))
        elif (error := _upsertion_error(upsertion)) is not None:
            errors.put(name, error)
        else:
            upsertions.put(name, upsertion)
    records: list = []
    results = []
    for name, deletion in deletions.items():
        records.append(RemoveUserScramCredentialRecord(name=name, mechanism=deletion.mechanism))
        results.append(Result(user=name, error_code=Errors.NONE, error_message=None))
    for name, upsertion in upsertions.items():
        records.append(credential_record(upsertion))
        results.append(Result(user=name, error_code=Errors.NONE, error_message=None))
    results += [Result(user=name, error_code=e.code, error_message=e.message) for name, e in errors.items()]
    return records, results
