"""The links of a proxied replicated cluster and which of them a cluster fault cuts: pure functions of
the cluster's shape, so a schedule's meaning can be read (and tested) without a cluster.

Every connection one process opens to another goes through a proxy of its own:

- ``client-<b>``: clients to broker b (b advertises the proxy);
- ``repl-<f>-<l>``: broker f to broker l (f fetching from l as a follower, and every other request f
  sends l: transaction markers, AddPartitionsToTxn);
- ``ctrl-<b>``: broker b to the controller (registration, heartbeats, the metadata log, forwarding).

A node is named by its id; the controller is node 0. Selectors name links by role, resolved when a
fault starts: ``replication`` (every repl link), ``replication:<node>`` (the repl links into and out of
one broker), ``clients``, ``client:<node>``, ``controller-links``, ``controller-link:<node>``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = [
    "ClusterLinks",
    "ISOLATE_FROM",
    "LinkSelectorError",
    "client_link",
    "controller_link",
    "replication_link",
]

ISOLATE_FROM = ("followers", "clients", "controller", "all")


class LinkSelectorError(ValueError):
    """A selector or node that does not name anything in this cluster."""


def client_link(broker: int) -> str:
    return f"client-{broker}"


def replication_link(dialer: int, listener: int) -> str:
    return f"repl-{dialer}-{listener}"


def controller_link(broker: int) -> str:
    return f"ctrl-{broker}"


@dataclass(frozen=True)
class ClusterLinks:
    brokers: tuple[int, ...]  # broker ids (the controller, node 0, is not one)

    def all(self) -> list[str]:
        return sorted(
            [client_link(b) for b in self.brokers]
            + [controller_link(b) for b in self.brokers]
            + [replication_link(f, leader) for f in self.brokers for leader in self.brokers if f != leader]
        )

    def replication_of(self, broker: int) -> list[str]:
        """The repl links into and out of one broker: it cannot fetch or be fetched from."""
        self._known(broker)
        others = [b for b in self.brokers if b != broker]
        return sorted(
            [replication_link(broker, o) for o in others] + [replication_link(o, broker) for o in others]
        )

    def isolate(self, node: int, source: str) -> list[str]:
        """The links that cut ``node`` off from its ``source``: other brokers (``followers``), clients,
        the controller or all of them. Node 0 (the controller) loses every broker's controller link."""
        if source not in ISOLATE_FROM:
            raise LinkSelectorError(f"isolate from {source!r}: one of {', '.join(ISOLATE_FROM)}")
        if node == 0:
            return [controller_link(b) for b in self.brokers]
        self._known(node)
        links = []
        if source in ("followers", "all"):
            links += self.replication_of(node)
        if source in ("clients", "all"):
            links.append(client_link(node))
        if source in ("controller", "all"):
            links.append(controller_link(node))
        return sorted(links)

    def split(self, minority: Iterable[int]) -> list[str]:
        """A minority of brokers cut off from the rest and from the controller (which stays with the
        majority); clients still reach both sides, as in Jepsen's majority/minority partitions."""
        side = set(minority)
        for broker in side:
            self._known(broker)
        if not side or len(side) * 2 >= len(self.brokers):
            raise LinkSelectorError(
                f"a minority of {len(self.brokers)} brokers is 1 to "
                f"{(len(self.brokers) - 1) // 2} of them, not {len(side)}"
            )
        rest = [b for b in self.brokers if b not in side]
        links = [replication_link(a, b) for a in side for b in rest] + [
            replication_link(b, a) for a in side for b in rest
        ]
        return sorted(links + [controller_link(b) for b in side])

    def expand(self, selector: str, node_of: Callable[[str], int] = int) -> list[str]:
        """Link names for one selector; a plain link name stands for itself. ``node_of`` turns a role
        (``leader``, ``follower``, an id) into a node id."""
        if selector == "*":
            return self.all()
        if selector == "replication":
            return [link for link in self.all() if link.startswith("repl-")]
        if selector == "clients":
            return [client_link(b) for b in self.brokers]
        if selector == "controller-links":
            return [controller_link(b) for b in self.brokers]
        kind, sep, role = selector.partition(":")
        if sep:
            node = node_of(role)
            if kind == "replication":
                return self.replication_of(node)
            if kind == "client":
                return [client_link(self._known(node))]
            if kind == "controller-link":
                return [controller_link(self._known(node))]
            raise LinkSelectorError(f"{selector!r}: not a link selector")
        if selector in self.all():
            return [selector]
        raise LinkSelectorError(f"{selector!r} names no link of this cluster")

    def _known(self, broker: int) -> int:
        if broker not in self.brokers:
            raise LinkSelectorError(
                f"no broker {broker} (the brokers are {', '.join(map(str, self.brokers))})"
            )
        return broker
