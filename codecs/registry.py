"""The API registry: what each API key is, which versions exist, and which header each version uses.

The two header quirks of the protocol live here and nowhere else: ControlledShutdown v0 requests use
request header v0 (no client id), and ApiVersions responses always use response header v0 so that a
client can read the answer whatever version it asked for."""

from __future__ import annotations

from dataclasses import dataclass

from ._exceptions import UnsupportedVersionError
from .messages import message_class
from .messages._registry import APIS

__all__ = ["ApiSchema", "api_schema", "api_schemas", "API_VERSIONS_KEY", "CONTROLLED_SHUTDOWN_KEY"]

API_VERSIONS_KEY = 18
CONTROLLED_SHUTDOWN_KEY = 7


@dataclass(frozen=True, slots=True)
class ApiSchema:
    api_key: int
    name: str
    module: str
    request_name: str
    response_name: str
    valid_versions: tuple[int, int]
    flexible_versions: tuple[int, int]
    listeners: tuple[str, ...]
    latest_version_unstable: bool
    deprecated_versions: tuple[int, int]

    @property
    def versions(self) -> range:
        return range(self.valid_versions[0], self.valid_versions[1] + 1)

    @property
    def min_version(self) -> int:
        return self.valid_versions[0]

    @property
    def max_version(self) -> int:
        return self.valid_versions[1]

    @property
    def request(self) -> type:
        return message_class(self.request_name)

    @property
    def response(self) -> type:
        return message_class(self.response_name)

    def supports(self, version: int) -> bool:
        return self.valid_versions[0] <= version <= self.valid_versions[1]

    def check(self, version: int) -> None:
        if not self.supports(version):
            lo, hi = self.valid_versions
            raise UnsupportedVersionError(
                f"{self.name} (key {self.api_key}) has versions {lo}-{hi}, not {version}"
            )

    def flexible(self, version: int) -> bool:
        return self.flexible_versions[0] <= version <= self.flexible_versions[1]

    def deprecated(self, version: int) -> bool:
        return self.deprecated_versions[0] <= version <= self.deprecated_versions[1]

    def request_header_version(self, version: int) -> int:
        if self.api_key == CONTROLLED_SHUTDOWN_KEY and version == 0:
            return 0
        return 2 if self.flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        if self.api_key == API_VERSIONS_KEY:
            return 0
        return 1 if self.flexible(version) else 0


_SCHEMAS = {row[0]: ApiSchema(*row) for row in APIS}


def api_schema(api_key: int) -> ApiSchema:
    """The schema of one API key; ``KeyError`` names the key if the protocol has no such API."""
    try:
        return _SCHEMAS[api_key]
    except KeyError:
        raise KeyError(f"no API with key {api_key}") from None


def api_schemas() -> list[ApiSchema]:
    return list(_SCHEMAS.values())
