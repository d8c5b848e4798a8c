"""The configuration probe: what a target's configuration decides (topic auto-creation, default partition
count) is read once per run, as a client sees it, and a difference is reported once."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from kconform.harness.diff.configuration import configuration_differences, probe_configuration


def _answers(*codes_and_partitions):
    """A fake target answering Metadata with these (error code, partition count) in turn."""
    answers = iter(codes_and_partitions)

    async def call(api_key, version, request):
        code, count = next(answers)
        topic = SimpleNamespace(name=request.topics[0].name, error_code=code, partitions=[0] * count)
        return SimpleNamespace(topics=[topic])

    return call


def test_a_topic_created_in_the_background_is_waited_for():
    call = _answers((5, 0), (5, 0), (0, 3))  # LEADER_NOT_AVAILABLE while Kafka creates it
    found = asyncio.run(probe_configuration(call, 8, "probe"))
    assert found == {"auto_create_topics": True, "default_partitions": 3}


def test_a_target_that_does_not_create_topics():  # UNKNOWN_TOPIC_OR_PARTITION every time
    found = asyncio.run(probe_configuration(_answers(*[(3, 0)] * 20), 8, "probe"))
    assert found == {"auto_create_topics": False, "default_partitions": None}


def test_differences_are_reported_once_per_setting():
    a = {"auto_create_topics": True, "default_partitions": 1}
    b = {"auto_create_topics": True, "default_partitions": 4}
    assert configuration_differences(a, b, ("reference", "tansu")) == [
        "configuration: default_partitions is 1 on reference, 4 on tansu"
    ]
    assert configuration_differences(a, dict(a), ("x", "y")) == []
