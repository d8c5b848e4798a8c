"""What a target is configured to do where configuration, not the protocol, decides an answer: whether
a Metadata request may create a topic (``auto.create.topics.enable``) and how many partitions a topic
created without a count gets (``num.partitions``). Read once per run by asking, as a client would (a
Metadata request that allows creation, for a probe topic of the run's own), so it works on any target;
two targets that differ here are reported once as a configuration difference, not as protocol causes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from kconform.codecs.messages import MetadataRequest

__all__ = ["configuration_differences", "probe_configuration"]

_METADATA = 3
_TRIES = 20  # Kafka creates the topic in the background: ask again, 0.1 s apart


async def probe_configuration(
    call: Callable[[int, int, object], Awaitable[object]], version: int, topic: str
) -> dict:
    """``{"auto_create_topics": bool, "default_partitions": int | None}`` as the target shows them;
    ``call(api_key, version, request)`` sends a request and returns the decoded answer."""
    request = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True
    )
    partitions = None
    for _ in range(_TRIES):
        answer = await call(_METADATA, version, request)
        entry = next((t for t in answer.topics if t.name == topic), None)
        if entry is not None and entry.error_code == 0 and entry.partitions:
            partitions = len(entry.partitions)
            break
        if entry is None or entry.error_code not in (3, 5):  # neither unknown yet nor leader not available
            break
        await asyncio.sleep(0.1)
    return {"auto_create_topics": partitions is not None, "default_partitions": partitions}


def configuration_differences(a: dict, b: dict, names: tuple[str, str]) -> list[str]:
    """One line per setting the two targets do not share."""
    return [
        f"configuration: {key} is {a.get(key)} on {names[0]}, {b.get(key)} on {names[1]}"
        for key in sorted(set(a) | set(b))
        if a.get(key) != b.get(key)
    ]
