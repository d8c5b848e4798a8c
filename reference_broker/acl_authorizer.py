"""Which authorizer a node runs, and the ``Authorizer`` value built from the image's ACLs.

``authorizer.class.name`` may name Kafka's ``StandardAuthorizer`` (the KRaft authorizer, whose ACLs live
in the metadata log) or be empty (no authorizer: the ACL APIs answer SECURITY_DISABLED); the config row
refuses any other class at start. ``super.users`` and ``allow.everyone.if.no.acl.found`` are the
settings StandardAuthorizer reads itself (``StandardAuthorizer.configure``).

The value is rebuilt only when the ACLs or those two settings change, so asking for it on every
request costs a dictionary look-up."""

from __future__ import annotations

from weakref import WeakKeyDictionary

from .cluster_metadata.acls import ClusterAcls
from .security.authorizer import Authorizer

__all__ = ["STANDARD_AUTHORIZER", "authorizer_configured", "authorizer_for"]

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

_built: WeakKeyDictionary[ClusterAcls, tuple[tuple, Authorizer]] = WeakKeyDictionary()


def authorizer_configured(config) -> bool:
    return config["authorizer.class.name"] == STANDARD_AUTHORIZER


def authorizer_for(config, acls: ClusterAcls) -> Authorizer | None:
    """The authorizer of a node with ``config`` over ``acls``; None when none is configured."""
    if not authorizer_configured(config):
        return None
    key = (acls.generation, config["super.users"], bool(config["allow.everyone.if.no.acl.found"]))
    cached = _built.get(acls)
    if cached is None or cached[0] != key:
        cached = (key, Authorizer.of(acls.bindings(), key[1], key[2]))
        _built[acls] = cached
    return cached[1]
