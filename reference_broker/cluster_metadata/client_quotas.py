"""The client quotas of the cluster image (Kafka's ``ClientQuotasImage``, built by ``ClientQuotaDelta``):
entity -> quota key -> value, from ``ClientQuotaRecord``. An entity is a set of (type, name) pairs over
"user", "client-id" and "ip"; a None name is the type's default entity. The controller judges
alterations against it, DescribeClientQuotas reads it (``describe``, KIP-546's filters) and the broker's
quota managers look limits up in it.

Entities and their keys iterate in the order their first record came (Kafka's TimelineHashMap has its
own order, which no client relies on)."""

from __future__ import annotations

from kconform.codecs.errors import Errors
from kconform.codecs.metadata_records import ClientQuotaRecord

__all__ = ["ClientQuotas", "DescribeRefused", "Entity", "entity_of", "USER", "CLIENT_ID", "IP"]

USER, CLIENT_ID, IP = "user", "client-id", "ip"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Entity = tuple[tuple[str, str | None], ...]  # (type, name) pairs sorted by type: one key per entity


def entity_of(pairs) -> Entity:
    """The entity key of (type, name) pairs; a type met twice keeps its last name, as Kafka's HashMap."""
    return tuple(sorted(dict(pairs).items()))


class DescribeRefused(Exception):
    """A filter Kafka refuses: the whole response carries ``code`` and the message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class ClientQuotas:
    def __init__(self) -> None:
        self._by_entity: dict[Entity, dict[str, float]] = {}

    def __len__(self) -> int:
        return len(self._by_entity)

    def get(self, entity: Entity) -> dict[str, float]:
        return dict(self._by_entity.get(entity, {}))

    def value(self, entity: Entity, key: str) -> float | None:
        return self._by_entity.get(entity, {}).get(key)

    def entities(self) -> list[tuple[Entity, dict[str, float]]]:
        return [(entity, dict(values)) for entity, values in self._by_entity.items()]

    # ---- replay (``ClientQuotaControlManager.replay``, ``ClientQuotaDelta.replay``) --------------

    def replay(self, record: ClientQuotaRecord) -> None:
        entity = entity_of((e.entity_type, e.entity_name) for e in record.entity)
        if record.remove:
            values = self._by_entity.get(entity, {})
            values.pop(record.key, None)  # removing an absent key is no error in Kafka either
            if not values:
                self._by_entity.pop(entity, None)
        else:
            self._by_entity.setdefault(entity, {})[record.key] = record.value

    # ---- DescribeClientQuotas (``ClientQuotasImage.describe``) ----------------------------------

    def describe(self, components, strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        """The entities the filter matches with their values; raises DescribeRefused for a filter Kafka
        refuses, with its code and message."""
        exact: dict[str, str | None] = {}
        specified: set[str] = set()
        for component in components:
            kind, match = component.entity_type, component.match
            if not kind:
                raise DescribeRefused(Errors.INVALID_REQUEST, "Invalid empty entity type.")
            if kind in exact or kind in specified:
                raise DescribeRefused(
                    Errors.INVALID_REQUEST, f"Entity type {kind} cannot appear more than once in the filter."
                )
            if kind not in (IP, USER, CLIENT_ID):
                raise DescribeRefused(Errors.UNSUPPORTED_VERSION, f"Unsupported entity type {kind}")
            if component.match_type == MATCH_EXACT:
                if match is None:
                    raise DescribeRefused(
                        Errors.INVALID_REQUEST,
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                    )
                exact[kind] = match
            elif component.match_type == MATCH_DEFAULT:
                if match is not None:
                    raise DescribeRefused(
                        Errors.INVALID_REQUEST,
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                    )
                exact[kind] = None
            elif component.match_type == MATCH_SPECIFIED:
                if match is not None:
                    raise DescribeRefused(
                        Errors.INVALID_REQUEST,
                        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                    )
                specified.add(kind)
            else:
                raise DescribeRefused(Errors.INVALID_REQUEST, f"Unknown match type {component.match_type}")
        named = exact.keys() | specified
        if IP in named and (USER in named or CLIENT_ID in named):
            raise DescribeRefused(
                Errors.INVALID_REQUEST,
                "Invalid entity filter component combination. IP filter component should not be used "
                "with user or clientId filter component.",
            )
        return [
            (entity, dict(values))
            for entity, values in self._by_entity.items()
            if _matches(dict(entity), exact, specified, strict)
        ]


def _matches(entity: dict[str, str | None], exact: dict, specified: set, strict: bool) -> bool:
    if strict and len(entity) != len(exact) + len(specified):
        return False
    if any(kind not in entity or entity[kind] != name for kind, name in exact.items()):
        return False
    return all(kind in entity for kind in specified)
