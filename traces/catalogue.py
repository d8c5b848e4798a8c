"""The API catalogue: which APIs a trace may name (``api_key``, ``api_name``) and at which versions.

Whoever knows the protocol builds it (the harness, from the codecs' registry); whoever only makes or
reads traces takes it as an argument, so that neither needs the codecs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["ApiCatalogue", "CatalogueEntry"]


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    """One API: its key, its name, and its lowest and highest valid version."""

    api_key: int
    name: str
    min_version: int
    max_version: int

    def __post_init__(self) -> None:
        if not 0 <= self.min_version <= self.max_version:
            raise ValueError(
                f"{self.name} (key {self.api_key}) has versions {self.min_version}-{self.max_version}"
            )


@dataclass(frozen=True, slots=True)
class ApiCatalogue:
    """Every API of the protocol, at most once each by key and by name."""

    entries: tuple[CatalogueEntry, ...]

    def __post_init__(self) -> None:
        for attribute in ("api_key", "name"):
            values = [getattr(entry, attribute) for entry in self.entries]
            repeated = sorted({str(v) for v in values if values.count(v) > 1})
            if repeated:
                raise ValueError(f"the API catalogue names {attribute} {', '.join(repeated)} more than once")

    @classmethod
    def of(cls, entries: Iterable[CatalogueEntry]) -> ApiCatalogue:
        return cls(tuple(entries))

    def named(self, name: str) -> CatalogueEntry:
        """The entry called ``name``; ``KeyError`` names it if the catalogue has no such API."""
        for entry in self.entries:
            if entry.name == name:
                return entry
        raise KeyError(f"the API catalogue has no API named {name!r}")
