"""The controller's half of CreateAcls and DeleteAcls, pure functions of the image's ACLs (Kafka's
``AclControlManager.createAcls`` and ``deleteAcls``); new ACL ids come from the ``new_id`` given.

Creating: each binding is checked (``validate_new_binding``: INVALID_REQUEST with Kafka's message); a
binding the cluster already holds, or one met earlier in the same request, succeeds without a second
record. More than ``MAX_RECORDS_PER_USER_OP`` new records fail the whole operation (Kafka's bounded
record list), and every binding gets POLICY_VIOLATION (``EventHandlerExceptionInfo``).

Deleting: each filter is checked (``validate_filter``), then every ACL it matches is removed and
returned. The removals of all filters are one set written together; a filter that takes that set past
``MAX_RECORDS_PER_USER_OP`` fails alone with UNKNOWN_SERVER_ERROR (Kafka's exception is no ApiException,
so its message is dropped), yet the removals it had already added stay in the set, as in Kafka."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from uuid import UUID

from kconform.codecs.errors import Errors
from kconform.codecs.metadata_records import RemoveAccessControlEntryRecord

from ..cluster_metadata.acls import ClusterAcls, entry_record
from ..security.acls import AclBinding, AclFilter, InvalidAcl, validate_filter, validate_new_binding

__all__ = ["AclOutcome", "MAX_RECORDS_PER_USER_OP", "create_acls", "delete_acls"]

MAX_RECORDS_PER_USER_OP = 10_000  # QuorumController.MAX_RECORDS_PER_BATCH
TOO_LARGE = "Unable to perform excessively large batch operation."


@dataclass(frozen=True, slots=True)
class AclOutcome:
    """One creation's or one filter's result: an error (code, message) or success, with the bindings a
    filter deleted."""

    code: int = Errors.NONE
    message: str | None = None
    deleted: tuple[AclBinding, ...] = field(default=())


def create_acls(
    acls: ClusterAcls, bindings: Sequence[AclBinding], new_id: Callable[[], UUID]
) -> tuple[list, list[AclOutcome]]:
    """The records to write and one outcome per binding, in order."""
    records: list = []
    outcomes: list[AclOutcome] = []
    taken = {acl_id for acl_id, _ in acls.items()}
    added: set[AclBinding] = set()
    for binding in bindings:
        try:
            validate_new_binding(binding)
        except InvalidAcl as exc:
            outcomes.append(AclOutcome(Errors.INVALID_REQUEST, str(exc)))
            continue
        if binding not in acls and binding not in added:
            if len(records) >= MAX_RECORDS_PER_USER_OP:
                return [], [AclOutcome(Errors.POLICY_VIOLATION, TOO_LARGE) for _ in bindings]
            added.add(binding)
            acl_id = new_id()
            while acl_id in taken:  # AclControlManager.newAclId draws again on a collision
                acl_id = new_id()
            taken.add(acl_id)
            records.append(entry_record(acl_id, binding))
        outcomes.append(AclOutcome())
    return records, outcomes


def delete_acls(acls: ClusterAcls, filters: Sequence[AclFilter]) -> tuple[list, list[AclOutcome]]:
    """The records to write and one outcome per filter, in order."""
    removed: dict[UUID, None] = {}  # the set of removals, in the order first met
    outcomes: list[AclOutcome] = []
    for acl_filter in filters:
        try:
            validate_filter(acl_filter)
        except InvalidAcl as exc:
            outcomes.append(AclOutcome(Errors.INVALID_REQUEST, str(exc)))
            continue
        outcomes.append(_delete_matching(acls, acl_filter, removed))
    return [RemoveAccessControlEntryRecord(id=acl_id) for acl_id in removed], outcomes


def _delete_matching(acls: ClusterAcls, acl_filter: AclFilter, removed: dict[UUID, None]) -> AclOutcome:
    deleted = []
    for acl_id, binding in acls.items():
        if acl_filter.matches(binding):
            deleted.append(binding)
            removed[acl_id] = None
            if len(removed) > MAX_RECORDS_PER_USER_OP:
                return AclOutcome(Errors.UNKNOWN_SERVER_ERROR, None)
    return AclOutcome(deleted=tuple(deleted))
