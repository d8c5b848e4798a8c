"""The ACLs of the cluster image (Kafka's ``AclsImage``, built by ``AclsDelta``; the controller keeps the
same two maps in ``AclControlManager``): id -> binding, from ``AccessControlEntryRecord`` and
``RemoveAccessControlEntryRecord``. The controller judges new bindings and deletions against it, a
broker's DescribeAcls and its authorizer read it.

Bindings keep the order their records came in, so ``bindings()`` is stable across replays and
restarts (Kafka's maps are hashed; no order of its is promised to clients)."""

from __future__ import annotations

from collections.abc import Iterator
from uuid import UUID

from kconform.codecs.metadata_records import AccessControlEntryRecord, RemoveAccessControlEntryRecord

from ..security.acls import AclBinding

__all__ = ["ClusterAcls", "UnknownAcl", "binding_of", "entry_record"]


class UnknownAcl(LookupError):
    """A removal of an ACL id the image does not hold (Kafka's replay throws): the log is broken."""


def binding_of(record: AccessControlEntryRecord) -> AclBinding:
    return AclBinding.of(
        record.resource_type,
        record.resource_name,
        record.pattern_type,
        record.principal,
        record.host,
        record.operation,
        record.permission_type,
    )


def entry_record(acl_id: UUID, binding: AclBinding) -> AccessControlEntryRecord:
    """``StandardAclWithId.toRecord``."""
    return AccessControlEntryRecord(
        id=acl_id,
        resource_type=binding.resource_type,
        resource_name=binding.resource_name,
        pattern_type=binding.pattern_type,
        principal=binding.principal,
        host=binding.host,
        operation=binding.operation,
        permission_type=binding.permission,
    )


class ClusterAcls:
    def __init__(self) -> None:
        self._by_id: dict[UUID, AclBinding] = {}
        self._existing: set[AclBinding] = set()
        self._bindings: tuple[AclBinding, ...] | None = ()
        self.generation = 0  # moves on every change: what a cached authorizer is keyed on

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, binding: object) -> bool:
        return binding in self._existing

    def items(self) -> Iterator[tuple[UUID, AclBinding]]:
        return iter(list(self._by_id.items()))

    def bindings(self) -> tuple[AclBinding, ...]:
        if self._bindings is None:
            self._bindings = tuple(self._by_id.values())
        return self._bindings

    # ---- replay -------------------------------------------------------------------------------

    def add(self, record: AccessControlEntryRecord) -> None:
        binding = binding_of(record)
        self._by_id[record.id] = binding
        self._existing.add(binding)
        self._changed()

    def remove(self, record: RemoveAccessControlEntryRecord) -> None:
        binding = self._by_id.pop(record.id, None)
        if binding is None:
            raise UnknownAcl(f"RemoveAccessControlEntryRecord for {record.id}: no ACL with that id")
        self._existing.discard(binding)
        self._changed()

    def _changed(self) -> None:
        self._bindings = None
        self.generation += 1
