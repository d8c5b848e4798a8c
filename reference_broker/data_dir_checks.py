"""What a node checks of its data directory before it starts, so that a directory it cannot use is one
clear error naming the file, not a traceback halfway through the start: the directory can be created
and written, ``meta.properties`` is this node's, and a pre-metadata-log ``kconform-metadata.json`` can
be read."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from .meta_properties import MetaPropertiesMismatch, check_owner

__all__ = ["DataDirProblem", "check_data_dir"]

_LEGACY_TOPICS = "kconform-metadata.json"  # legacy_topics.TOPICS_FILE


class DataDirProblem(Exception):
    """A data directory this node cannot use; the message says which file and why."""


def check_data_dir(data_dir: Path, node_id: int) -> None:
    data_dir = Path(data_dir)
    _check_writable(data_dir)
    try:
        check_owner(data_dir, node_id)
    except MetaPropertiesMismatch as exc:
        raise DataDirProblem(str(exc)) from None
    _check_legacy_topics(data_dir / _LEGACY_TOPICS)


def _check_writable(data_dir: Path) -> None:
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise DataDirProblem(f"data directory {data_dir} is a file, not a directory") from None
    except OSError as exc:
        raise DataDirProblem(f"cannot create data directory {data_dir}: {exc.strerror or exc}") from None
    probe = data_dir / f".kconform-write-check-{os.getpid()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:  # a read-only mount (EROFS), no permission, a full disk
        raise DataDirProblem(f"cannot write to data directory {data_dir}: {exc.strerror or exc}") from None


def _check_legacy_topics(path: Path) -> None:
    """The shape ``legacy_topics.import_legacy_topics`` reads: {"topics": [{"name", "topic_id",
    "partitions": [{"index", "replicas"}], "configs"?}]}."""
    if not path.exists():
        return
    try:
        doc = json.loads(path.read_text())
        for topic in doc["topics"]:
            if not isinstance(topic["name"], str):
                raise TypeError("a topic name is not a string")
            uuid.UUID(topic["topic_id"])
            for partition in topic["partitions"]:
                int(partition["index"])
                [int(b) for b in partition["replicas"]]
            dict(topic.get("configs", {}))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataDirProblem(
            f"cannot read the topic metadata in {path} ({type(exc).__name__}: {exc}); restore it from a "
            "backup or move it away to start with no topics (the partition logs stay on disk)"
        ) from None
