"""The controller's half of AlterClientQuotas, a pure function of the image's quotas (Kafka's
``ClientQuotaControlManager.alterClientQuotas``).

Each entry is judged alone, in Kafka's order: an entry with a quota key given twice, or whose entity came
before in the request, gets "Ignoring duplicate entity" (INVALID_REQUEST; it replaces that entity's
result, though records of the earlier mention stay written, as in Kafka); then the entity
(empty, unknown type, empty name), the combination of types (ip stands alone and must be an address or a
resolvable host; user and client-id give the user-and-client keys), and each value (a known key,
greater than 0, a whole number for the LONG keys). An entry that passes writes one ``ClientQuotaRecord``
per key whose value changes, and one removal per removed key the entity has; nothing of a failed entry
is written. A request entity's type named twice keeps its last name (Kafka reads the entity into a
HashMap), so that is no error."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

from kconform.codecs.errors import Errors
from kconform.codecs.messages import AlterClientQuotasResponse
from kconform.codecs.metadata_records import ClientQuotaRecord

from ..cluster_metadata.client_quotas import CLIENT_ID, IP, USER, ClientQuotas, Entity, entity_of
from ..java_hash_map import JavaHashMap

__all__ = [
    "QuotaError",
    "alter_client_quotas",
    "alter_response",
    "java_order",
    "USER_AND_CLIENT_KEYS",
    "IP_KEYS",
]

# QuotaConfig.userAndClientQuotaConfigs and ipConfigs: key -> ConfigDef type
USER_AND_CLIENT_KEYS = {
    "producer_byte_rate": "LONG",
    "consumer_byte_rate": "LONG",
    "request_percentage": "DOUBLE",
    "controller_mutation_rate": "DOUBLE",
}
IP_KEYS = {"connection_creation_rate": "INT"}
_INTEGRAL_MAX = {"SHORT": (2**15 - 1, "a SHORT"), "INT": (2**31 - 1, "an INT"), "LONG": (2**63 - 1, "a LONG")}


@dataclass(frozen=True, slots=True)
class QuotaError:
    code: int
    message: str


def java_order(entity: Entity) -> list[tuple[str, str | None]]:
    """The entity's (type, name) pairs in the order Kafka's HashMap of them iterates (responses and
    messages follow it)."""
    kinds: JavaHashMap = JavaHashMap()
    for kind, name in entity:
        kinds.put(kind, name)
    return kinds.items()


def _java_entity(entity: Entity) -> str:
    """``ClientQuotaEntity.toString``: the map of the entity, as Java prints it."""
    return (
        "ClientQuotaEntity(entries={"
        + ", ".join(f"{k}={'null' if v is None else v}" for k, v in java_order(entity))
        + "})"
    )


def _invalid(message: str) -> QuotaError:
    return QuotaError(Errors.INVALID_REQUEST, message)


def _resolvable(host: str) -> bool:
    """``InetAddress.getByName`` succeeds: a literal address, or a name the resolver knows."""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(host, None)
        return True
    except (OSError, UnicodeError):
        return False


def _entity_error(entity: Entity) -> QuotaError | None:
    """``validateEntity``."""
    if not entity:
        return _invalid("Invalid empty client quota entity")
    for kind, name in entity:
        if kind not in (USER, CLIENT_ID, IP):
            return _invalid(f"Unhandled client quota entity type: {kind}")
        if name is not None and not name:
            return _invalid(f"Empty {kind} not supported")
    return None


def _keys_for(entity: Entity, resolvable) -> tuple[dict[str, str] | None, QuotaError | None]:
    """``configKeysForEntityType``: the keys an entity may carry, or the combination's error."""
    kinds = dict(entity)
    if IP in kinds:
        if USER in kinds or CLIENT_ID in kinds:
            # Kafka's message lacks the space between "should" and "not"
            return None, _invalid(
                "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
            )
        ip = kinds[IP]
        if ip is not None and not resolvable(ip):
            return None, _invalid(f"{ip} is not a valid IP or resolvable host.")
        return IP_KEYS, None
    return USER_AND_CLIENT_KEYS, None


def _value_error(keys: dict[str, str], key: str, value: float) -> QuotaError | None:
    """``validateQuotaKeyValue``."""
    kind = keys.get(key)
    if kind is None:
        return _invalid(f"Invalid configuration key {key}")
    if value <= 0.0:
        return _invalid(f"Quota {key} must be greater than 0")
    if kind == "DOUBLE":
        return None
    limit, article = _INTEGRAL_MAX[kind]
    if value > limit:
        return _invalid(f"Proposed value for {key} is too large for {article}.")
    if abs(value % 1.0) > 1e-6:
        return _invalid(f"{key} cannot be a fractional value.")
    return None


def _alter_entity(
    quotas: ClientQuotas, entity: Entity, ops: dict, resolvable
) -> tuple[list, QuotaError | None]:
    error = _entity_error(entity)
    if error is not None:
        return [], error
    keys, error = _keys_for(entity, resolvable)
    if error is not None:
        return [], error
    current = quotas.get(entity)
    records = []
    for key, value in ops.items():
        entity_data = [ClientQuotaRecord.EntityData(entity_type=k, entity_name=n) for k, n in entity]
        if value is None:
            if key in current:
                records.append(ClientQuotaRecord(entity=entity_data, key=key, remove=True))
            continue
        error = _value_error(keys, key, value)
        if error is not None:
            return [], error
        if current.get(key) != value:  # only a change is written
            records.append(ClientQuotaRecord(entity=entity_data, key=key, value=value))
    return records, None


def alter_client_quotas(quotas: ClientQuotas, entries, resolvable=_resolvable) -> tuple[list, list]:
    """The records to write and ``(entity, QuotaError | None)`` per distinct entity, in the order each
    entity first came. ``resolvable`` judges an ip entity's host (passed in: tests need no resolver)."""
    records: list = []
    results: dict[Entity, QuotaError | None] = {}
    for entry in entries:
        entity = entity_of((e.entity_type, e.entity_name) for e in entry.entity)
        ops: dict[str, float | None] = {}
        duplicate_key = False
        for op in entry.ops:
            if op.key in ops:
                duplicate_key = True
            else:
                ops[op.key] = None if op.remove else op.value
        if duplicate_key or entity in results:  # a duplicate key's message is replaced by this one
            results[entity] = _invalid(f"Ignoring duplicate entity {_java_entity(entity)}")
            continue
        written, error = _alter_entity(quotas, entity, ops, resolvable)
        records += written
        results[entity] = error
    return records, list(results.items())


def alter_response(results) -> AlterClientQuotasResponse:
    """``AlterClientQuotasResponse.fromQuotaEntities`` of the controller's ``(entity, error)`` pairs."""
    Entry = AlterClientQuotasResponse.EntryData
    Entity = AlterClientQuotasResponse.EntityData
    return AlterClientQuotasResponse(
        entries=[
            Entry(
                error_code=Errors.NONE if error is None else error.code,
                error_message=None if error is None else error.message,
                entity=[Entity(entity_type=k, entity_name=n) for k, n in java_order(entity)],
            )
            for entity, error in results
        ]
    )
