"""The ``bootstrap`` target: any broker already running at host:port (a user's Kafka, Redpanda, a
proxy, anything). kconform neither starts nor stops it; ``start`` only checks that it answers."""

from __future__ import annotations

from ..client.network import parse_bootstrap
from .base import Target, TargetError

__all__ = ["BootstrapTarget"]


class BootstrapTarget(Target):
    kind = "bootstrap"

    def __init__(self, bootstrap: str, name: str | None = None) -> None:
        super().__init__(name or f"bootstrap:{bootstrap}")
        try:
            parse_bootstrap(bootstrap)
        except ValueError as exc:
            raise TargetError(f"bootstrap target {bootstrap!r}: {exc}") from exc
        self._bootstrap = bootstrap

    def secure_brokers(self, protocol: str, properties: dict[str, str]) -> None:
        """A running cluster is secured by whoever runs it: the clients' properties reach it as it is."""
        if properties:
            raise TargetError(
                f"target {self.name}: --broker-config is for the brokers kconform starts, "
                "not a running cluster"
            )

    def start(self) -> None:
        self.api_versions(refresh=True)  # raises TargetError naming the address when nothing answers

    def stop(self) -> None:
        pass

    @property
    def bootstrap(self) -> str:
        return self._bootstrap
