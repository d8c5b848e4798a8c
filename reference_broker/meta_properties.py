"""Kafka's ``meta.properties``: the cluster id and node id a data directory belongs to, written when
the directory is first used (as ``kafka-storage format`` writes it) and checked on every start, so a
node never joins another cluster's data or takes another node's."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from .config import load_properties

__all__ = ["MetaPropertiesMismatch", "check_owner", "new_cluster_id", "read_cluster_id", "load_or_create"]


class MetaPropertiesMismatch(RuntimeError):
    """The data directory belongs to another node or cluster."""


def new_cluster_id() -> str:
    """A random id in Kafka's form (``Uuid.randomUuid().toString()``: URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def read_cluster_id(data_dir: Path) -> str | None:
    path = Path(data_dir) / "meta.properties"
    return load_properties(path).get("cluster.id") if path.exists() else None


def check_owner(data_dir: Path, node_id: int) -> dict[str, str] | None:
    """The directory's ``meta.properties`` (None if there is none yet), checked to be readable and
    this node's (Kafka's ``MetaPropertiesEnsemble.verify``: a node id that differs is fatal)."""
    path = Path(data_dir) / "meta.properties"
    if not path.exists():
        return None
    try:
        props = load_properties(path)
    except (OSError, ValueError) as exc:
        raise MetaPropertiesMismatch(f"cannot read {path}: {exc}") from None
    if "cluster.id" not in props:
        raise MetaPropertiesMismatch(f"{path} has no cluster.id: restore it or use another data directory")
    owner = props.get("node.id")
    if owner is not None and (not owner.strip().lstrip("-").isdigit() or int(owner) != node_id):
        raise MetaPropertiesMismatch(
            f"{path} belongs to node {owner}, not {node_id}: use that node id or another data directory"
        )
    return props


def load_or_create(data_dir: Path, node_id: int, cluster_id: str | None = None) -> str:
    """The directory's cluster id, writing ``meta.properties`` first if there is none (with
    ``cluster_id`` when given, a new one otherwise)."""
    path = Path(data_dir) / "meta.properties"
    props = check_owner(data_dir, node_id)
    if props is not None:
        if cluster_id is not None and props.get("cluster.id") != cluster_id:
            raise MetaPropertiesMismatch(
                f"{path} belongs to cluster {props.get('cluster.id')}, not {cluster_id}: use another data "
                "directory for a node of this cluster"
            )
        return props["cluster.id"]
    cluster_id = cluster_id or new_cluster_id()
    path.write_text(
        f"#\nversion=1\ncluster.id={cluster_id}\nnode.id={node_id}\ndirectory.id={new_cluster_id()}\n"
    )
    return cluster_id
