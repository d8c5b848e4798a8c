"""Our admin client against a reference broker process: topics (create, with replica assignments,
delete, list, errors, input checked before anything is sent) and configs (alter in every way, describe,
broker configs), each checked against what the broker or confluent-kafka reads back."""

from __future__ import annotations

import asyncio

import pytest

from kconform.codecs.errors import Errors
from kconform.harness.client.admin import (
    Admin,
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    CreatedTopic,
    NewTopic,
    OffsetSpec,
)
from kconform.harness.client.errors import BrokerError

from ..support.admin_client import TOPIC, _code, _name, admin_run, join_group

BROKER = ConfigResourceType.BROKER


# ---- topics ----------------------------------------------------------------------------------------


def test_create_topics_reports_each_topic_and_the_broker_agrees(bootstrap):
    made, dry, bad, overridden = _name("made"), _name("dry"), _name("bad"), _name("cfg")

    async def body(admin: Admin):
        created = await admin.create_topics(
            [
                NewTopic(made, 3, 1),
                NewTopic(bad, 0, 1),
                NewTopic(overridden, 1, 1, {"retention.ms": "123456", "cleanup.policy": "compact"}),
            ]
        )
        validated = await admin.create_topics([NewTopic(dry, 2, 1)], validate_only=True)
        again = await admin.create_topics([NewTopic(made, 3, 1)])
        described = await admin.describe_topics([made, overridden, dry, bad])
        listed = await admin.list_topics()
        return created, validated, again, described, listed

    created, validated, again, described, listed = admin_run(bootstrap, body)

    assert isinstance(created[made], CreatedTopic)
    assert (created[made].num_partitions, created[made].replication_factor) == (3, 1)
    assert _code(created[bad]) == Errors.INVALID_PARTITIONS
    assert created[overridden].configs["retention.ms"].value == "123456"
    assert created[overridden].configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert created[overridden].configs["segment.ms"].is_default
    assert isinstance(validated[dry], CreatedTopic) and validated[dry].num_partitions == 2
    assert _code(again[made]) == Errors.TOPIC_ALREADY_EXISTS

    description = described[made]
    assert description.topic_id == created[made].topic_id
    assert not description.is_internal
    assert [p.partition for p in description.partitions] == [0, 1, 2]
    assert all(p.leader == 1 and p.replicas == (1,) and p.isr == (1,) for p in description.partitions)
    assert len(described[overridden].partitions) == 1
    # validate_only created nothing, and neither did the refused topic
    assert _code(described[dry]) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert _code(described[bad]) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert {made, overridden} <= set(listed) and not {dry, bad} & set(listed)
    assert listed[made].topic_id == created[made].topic_id


def test_create_topic_with_replica_assignments(bootstrap):
    name = _name("assigned")

    async def body(admin: Admin):
        created = await admin.create_topics([NewTopic(name, assignments={0: [1], 1: [1]})])
        return created, await admin.describe_topics([name])

    created, described = admin_run(bootstrap, body)
    assert created[name].num_partitions == 2
    assert [(p.partition, p.replicas) for p in described[name].partitions] == [(0, (1,)), (1, (1,))]


def test_delete_topics_then_the_topic_is_gone(bootstrap, topic):
    async def body(admin: Admin):
        deleted = await admin.delete_topics([topic, _name("never")])
        return deleted, await admin.describe_topics([topic]), await admin.list_topics()

    deleted, described, listed = admin_run(bootstrap, body)
    assert deleted[topic] is None
    assert _code(deleted[next(k for k in deleted if k != topic)]) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert _code(described[topic]) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert topic not in listed


def test_list_topics_hides_internal_topics_unless_asked(bootstrap, topic):
    group = _name("g")
    consumer = join_group(bootstrap, group, topic, 3, "classic")  # makes __consumer_offsets exist
    consumer.close()

    async def body(admin: Admin):
        return await admin.list_topics(), await admin.list_topics(include_internal=True)

    plain, everything = admin_run(bootstrap, body)
    assert "__consumer_offsets" not in plain
    assert everything["__consumer_offsets"].is_internal
    assert topic in plain and not plain[topic].is_internal


def test_raise_errors_raises_the_first_item_error(bootstrap, topic):
    async def body(admin: Admin):
        return await admin.create_topics([NewTopic(topic, 1, 1)], raise_errors=True)

    with pytest.raises(BrokerError) as caught:
        admin_run(bootstrap, body)
    assert caught.value.code == Errors.TOPIC_ALREADY_EXISTS


@pytest.mark.parametrize(
    "call",
    [
        lambda a: a.create_topics([NewTopic("")]),
        lambda a: a.create_topics([NewTopic("x", 1, 1), NewTopic("x", 2, 1)]),
        lambda a: a.create_topics([NewTopic("x", 3, 1, assignments={0: [1]})]),
        lambda a: a.delete_topics([""]),
        lambda a: a.describe_topics([None]),
        lambda a: a.list_offsets({("", 0): OffsetSpec.latest()}),
        lambda a: a.list_offsets({("t", -1): OffsetSpec.latest()}),
        lambda a: a.list_offsets({("t", 0): -1}),
        lambda a: a.delete_records({("t", 0): -5}),
        lambda a: a.describe_configs([ConfigResource(BROKER, "one")]),
        lambda a: a.incremental_alter_configs({ConfigResource(TOPIC, "t"): [AlterConfigOp("")]}),
        lambda a: a.describe_groups([""]),
        lambda a: a.list_consumer_group_offsets(""),
    ],
    ids=[
        "empty-topic",
        "duplicate-topic",
        "assignments-and-count",
        "delete-empty",
        "describe-none",
        "offsets-empty-topic",
        "offsets-negative-partition",
        "offsets-not-a-spec",
        "delete-records-bad-offset",
        "broker-resource-not-an-id",
        "alter-without-name",
        "group-empty",
        "offsets-group-empty",
    ],
)
def test_bad_input_fails_before_anything_is_sent(call):
    # Nothing listens on port 1: reaching the network would raise ConnectionLost, not ValueError.
    async def main():
        admin = Admin({"bootstrap.servers": "127.0.0.1:1", "default.api.timeout.ms": 1000})
        try:
            with pytest.raises(ValueError):
                await call(admin)
        finally:
            await admin.close()

    asyncio.run(main())


def test_offset_spec_refuses_a_negative_timestamp():
    with pytest.raises(ValueError):
        OffsetSpec.for_timestamp(-1)


# ---- configs ---------------------------------------------------------------------------------------


def test_alter_configs_set_append_subtract_delete_read_back(bootstrap, topic):
    resource = ConfigResource(TOPIC, topic)

    async def read(admin: Admin, *names):
        entries = (await admin.describe_configs([resource], raise_errors=True))[resource]
        return [entries[n] for n in names]

    async def body(admin: Admin):
        steps = {}
        ops = [
            AlterConfigOp("retention.ms", "3600000"),
            AlterConfigOp("cleanup.policy", "compact", AlterConfigOpType.APPEND),
        ]
        steps["set"] = await admin.incremental_alter_configs({resource: ops})
        steps["after_set"] = await read(admin, "retention.ms", "cleanup.policy")
        ops = [AlterConfigOp("cleanup.policy", "delete", AlterConfigOpType.SUBTRACT)]
        steps["subtract"] = await admin.incremental_alter_configs({resource: ops})
        steps["after_subtract"] = await read(admin, "cleanup.policy")
        ops = [AlterConfigOp("retention.ms", "1", AlterConfigOpType.SET)]
        steps["dry"] = await admin.incremental_alter_configs({resource: ops}, validate_only=True)
        steps["after_dry"] = await read(admin, "retention.ms")
        ops = [AlterConfigOp("retention.ms", op=AlterConfigOpType.DELETE)]
        steps["delete"] = await admin.incremental_alter_configs({resource: ops})
        steps["after_delete"] = await read(admin, "retention.ms")
        ops = [AlterConfigOp("retention.ms", "not-a-number")]
        steps["invalid"] = await admin.incremental_alter_configs({resource: ops})
        return steps

    steps = admin_run(bootstrap, body)
    assert steps["set"] == {resource: None}
    retention, policy = steps["after_set"]
    assert (retention.value, retention.source, retention.is_default) == (
        "3600000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
        False,
    )
    assert policy.value == "delete,compact"
    assert steps["subtract"] == {resource: None}
    assert steps["after_subtract"][0].value == "compact"
    assert steps["dry"] == {resource: None}
    assert steps["after_dry"][0].value == "3600000"  # validate_only changed nothing
    assert steps["delete"] == {resource: None}
    (retention,) = steps["after_delete"]
    assert retention.is_default and retention.source == ConfigSource.DEFAULT_CONFIG
    assert retention.value == "604800000"
    assert _code(steps["invalid"][resource]) == Errors.INVALID_CONFIG


def test_describe_configs_of_a_broker_and_of_a_missing_topic(bootstrap):
    broker_resource, missing = ConfigResource(BROKER, "1"), ConfigResource(TOPIC, _name("missing"))

    async def body(admin: Admin):
        return await admin.describe_configs([broker_resource, missing], include_synonyms=True)

    found = admin_run(bootstrap, body)
    entries = found[broker_resource]
    assert entries["group.initial.rebalance.delay.ms"].value == "0"  # the broker's own override
    assert entries["group.initial.rebalance.delay.ms"].source == ConfigSource.STATIC_BROKER_CONFIG
    assert entries["num.partitions"].is_default
    assert _code(found[missing]) == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_broker_config_set_then_delete(bootstrap):
    resource = ConfigResource(BROKER, "1")
    name = "log.cleaner.threads"

    async def body(admin: Admin):
        before = (await admin.describe_configs([resource]))[resource][name]
        changed = await admin.incremental_alter_configs({resource: [AlterConfigOp(name, "2")]})
        during = (await admin.describe_configs([resource]))[resource][name]
        reset = await admin.incremental_alter_configs(
            {resource: [AlterConfigOp(name, op=AlterConfigOpType.DELETE)]}
        )
        after = (await admin.describe_configs([resource]))[resource][name]
        return before, changed, during, reset, after

    before, changed, during, reset, after = admin_run(bootstrap, body)
    assert changed == {resource: None} and reset == {resource: None}
    assert (during.value, during.source) == ("2", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert (after.value, after.source) == (before.value, before.source)
