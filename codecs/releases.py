"""Apache Kafka releases as the protocol sees them: which API versions a broker of each release
advertises in ApiVersions, and which of those it actually serves.

The two differ in one place. Kafka 4.0 removed Produce v0-2 (KIP-896) but its brokers still advertise
Produce from v0 because librdkafka refuses to produce compressed batches to a broker whose minimum
Produce version is above 2 (KAFKA-18659; Kafka's ``ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION``);
a request at v0-2 is then refused like any other version the broker lacks, by closing the connection.
That quirk lives here, with the release table, and nowhere else."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from .messages._releases import RELEASES
from .registry import api_schema

__all__ = [
    "KafkaRelease",
    "UnknownRelease",
    "kafka_release",
    "kafka_releases",
    "newest_covered_release",
    "uncovered_versions",
]

_PRODUCE = 0
_PRODUCE_SERVED_MIN_FROM_4_0 = 3  # KIP-896: ProduceRequest.json starts at v3 from Kafka 4.0 on


class UnknownRelease(ValueError):
    """A Kafka version the release table does not have."""


@dataclass(frozen=True, slots=True)
class KafkaRelease:
    version: str  # "3.7", "0.10.2", ...
    advertised: dict[int, tuple[int, int]]  # api key -> (min, max) in its ApiVersions answer

    @property
    def key(self) -> tuple[int, ...]:
        return tuple(int(part) for part in self.version.split("."))

    @property
    def has_api_versions(self) -> bool:
        """ApiVersions arrived in 0.10.0 (KIP-35); older brokers close the connection on it."""
        return 18 in self.advertised

    def served(self, api_key: int) -> tuple[int, int] | None:
        """The versions of ``api_key`` this release's broker handles, or None if it has no such API."""
        versions = self.advertised.get(api_key)
        if versions is None:
            return None
        if api_key == _PRODUCE and self.key >= (4, 0):
            return (max(versions[0], _PRODUCE_SERVED_MIN_FROM_4_0), versions[1])
        return versions

    def serves(self, api_key: int, version: int) -> bool:
        versions = self.served(api_key)
        return versions is not None and versions[0] <= version <= versions[1]

    def __str__(self) -> str:
        return self.version


@cache
def kafka_releases() -> tuple[KafkaRelease, ...]:
    """Every release in the table, oldest first."""
    return tuple(KafkaRelease(version, dict(apis)) for version, apis in RELEASES.items())


def kafka_release(version: str) -> KafkaRelease:
    """The release named ``version`` ("4.1", "3.7", "0.10.2"; "3.7.0" and "v3.7" name 3.7 too)."""
    wanted = version.strip().removeprefix("v")
    for release in kafka_releases():
        if wanted == release.version or wanted.removesuffix(".0") == release.version:
            return release
    known = ", ".join(r.version for r in kafka_releases())
    raise UnknownRelease(f"no Kafka release {version!r} in the release table (known: {known})")


def uncovered_versions(release: KafkaRelease) -> list[tuple[int, int, int]]:
    """(api key, min, max) of every advertised row the codecs cannot encode in full."""
    missing = []
    for key, (lo, hi) in sorted(release.advertised.items()):
        try:
            valid = api_schema(key).valid_versions
        except KeyError:
            missing.append((key, lo, hi))
            continue
        if lo < valid[0] or hi > valid[1]:
            missing.append((key, lo, hi))
    return missing


@cache
def newest_covered_release() -> KafkaRelease:
    """The newest release whose every advertised version the codecs encode and decode."""
    return next(r for r in reversed(kafka_releases()) if not uncovered_versions(r))
