"""Client quotas, one rule of Kafka's a test: the windowed rate and throttle time (``Rate``, ``SampledStat``,
``QuotaUtils.throttleTime``) against hand-computed values, the quota lookup order (``DefaultQuotaCallback``),
AlterClientQuotas' checks and messages (``ClientQuotaControlManager``), DescribeClientQuotas' filters
(``ClientQuotasImage.describe``, KIP-546), quotas kept in the metadata log across a restart, and a live
producer held to its byte-rate quota by throttling (KIP-219)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from kconform.codecs.errors import Errors
from kconform.codecs.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kconform.codecs.metadata_records import ClientQuotaRecord
from kconform.reference_broker.cluster_metadata.client_quotas import ClientQuotas
from kconform.reference_broker.controller.client_quotas import alter_client_quotas
from kconform.reference_broker.node import BrokerNode
from kconform.reference_broker.quotas import PRODUCE, WindowedRate, quota_for, throttle_time_ms

from ...support.rawclient import RawClient

Entry = AlterClientQuotasRequest.EntryData
EntityData = AlterClientQuotasRequest.EntityData
Op = AlterClientQuotasRequest.OpData
Component = DescribeClientQuotasRequest.ComponentData
EXACT, DEFAULT, SPECIFIED = 0, 1, 2
INVALID = Errors.INVALID_REQUEST


def entry(entity: dict, **ops) -> Entry:
    return Entry(
        entity=[EntityData(entity_type=k, entity_name=v) for k, v in entity.items()],
        ops=[Op(key=k, value=0.0 if v is None else v, remove=v is None) for k, v in ops.items()],
    )


# ---- the rate and the throttle time ------------------------------------------------------------


def test_a_new_rate_divides_by_samples_minus_one_windows():
    rate = WindowedRate(samples=11, window_ms=1000)
    rate.record(5000, now_ms=0)
    # one sample, 0 ms elapsed: the window is padded to 10 whole windows
    assert rate.window_ms_at(0) == 10_000
    assert rate.measure(0) == pytest.approx(500.0)


def test_throttle_time_is_the_excess_over_the_bound_times_the_window():
    rate = WindowedRate(samples=11, window_ms=1000)
    rate.record(3000, now_ms=0)  # 300 B/s over 10 s
    assert throttle_time_ms(rate, 300.0, 0) == 0  # exactly at the bound is acceptable
    rate.record(1000, now_ms=500)  # 4000 B over 0.5 s padded by 10 windows: 10.5 s
    # (4000 / 10.5 - 250) / 250 * 10500 ms = (4000 - 2625) / 250 * 1000 = 5500 ms
    assert throttle_time_ms(rate, 250.0, 500) == 5500
    assert throttle_time_ms(rate, 250.0, 500, max_ms=1000) == 1000  # the request quota's bound


def test_samples_roll_over_and_expire():
    rate = WindowedRate(samples=2, window_ms=1000)
    rate.record(100, now_ms=0)
    rate.record(100, now_ms=1000)  # a second sample
    # elapsed 1500 ms since the oldest sample started: 200 B over 1.5 s
    assert rate.measure(1500) == pytest.approx(200 / 1.5)
    # the first sample's last event is 2 windows old at 2000: it is reset; the window is padded to 1 s
    assert rate.measure(2000) == pytest.approx(100.0)
    assert rate.measure(10_000) == 0.0


def test_rounding_is_javas_half_up():
    rate = WindowedRate(samples=2, window_ms=1000)
    rate.record(3, now_ms=0)  # 3 units over 1 s against a bound of 2: 0.5 * 1000 ms
    assert throttle_time_ms(rate, 2.0, 0) == 500
    rate = WindowedRate(samples=2, window_ms=1000)
    rate.record(2001, now_ms=0)  # (2001 - 2000) / 2000 * 1000 ms = 0.5: half up gives 1, round() 0
    assert throttle_time_ms(rate, 2000.0, 0) == 1


def test_bad_rate_settings_are_refused():
    with pytest.raises(ValueError, match="at least one sample"):
        WindowedRate(samples=0)


# ---- the quota lookup order ---------------------------------------------------------------------


def quotas_with(*entities) -> ClientQuotas:
    quotas = ClientQuotas()
    for value, pairs in enumerate(entities, start=1):
        data = [ClientQuotaRecord.EntityData(entity_type=k, entity_name=v) for k, v in pairs]
        quotas.replay(ClientQuotaRecord(entity=data, key=PRODUCE, value=float(value)))
    return quotas


ORDER = [
    (("user", "u"), ("client-id", "c")),
    (("user", "u"), ("client-id", None)),
    (("user", "u"),),
    (("user", None), ("client-id", "c")),
    (("user", None), ("client-id", None)),
    (("user", None),),
    (("client-id", "c"),),
    (("client-id", None),),
]


def test_the_most_specific_entity_wins_in_kafkas_order():
    """Remove the winner one at a time: the next in ``DefaultQuotaCallback``'s order takes over."""
    for first in range(len(ORDER)):
        quotas = ClientQuotas()
        for pairs in ORDER[first:]:
            data = [ClientQuotaRecord.EntityData(entity_type=k, entity_name=v) for k, v in pairs]
            quotas.replay(ClientQuotaRecord(entity=data, key=PRODUCE, value=float(ORDER.index(pairs) + 1)))
        limit, _tags = quota_for(quotas, PRODUCE, "u", "c")
        assert limit == first + 1
    assert quota_for(ClientQuotas(), PRODUCE, "u", "c") is None
    assert quota_for(quotas_with(*ORDER), "consumer_byte_rate", "u", "c") is None


# ---- AlterClientQuotas' checks -------------------------------------------------------------------


def alter(quotas: ClientQuotas, *entries, resolvable=lambda host: host != "no.such.host"):
    records, results = alter_client_quotas(quotas, entries, resolvable)
    return records, [(dict(e), None if err is None else (err.code, err.message)) for e, err in results]


@pytest.mark.parametrize(
    "bad, message",
    [
        (entry({}, producer_byte_rate=1.0), "Invalid empty client quota entity"),
        (entry({"group": "g"}, producer_byte_rate=1.0), "Unhandled client quota entity type: group"),
        (entry({"user": ""}, producer_byte_rate=1.0), "Empty user not supported"),
        (entry({"user": "u"}, bogus=1.0), "Invalid configuration key bogus"),
        (entry({"user": "u"}, connection_creation_rate=1.0), "Invalid configuration key connection_creation_rate"),  # noqa: E501
        (entry({"ip": "1.2.3.4"}, producer_byte_rate=1.0), "Invalid configuration key producer_byte_rate"),
        (entry({"user": "u"}, producer_byte_rate=0.0), "Quota producer_byte_rate must be greater than 0"),
        (entry({"user": "u"}, request_percentage=-1.0), "Quota request_percentage must be greater than 0"),
        (entry({"user": "u"}, producer_byte_rate=1.5), "producer_byte_rate cannot be a fractional value."),
        (entry({"user": "u"}, producer_byte_rate=2.0**64), "Proposed value for producer_byte_rate is too large for a LONG."),  # noqa: E501
        (entry({"ip": "1.2.3.4"}, connection_creation_rate=2.0**31), "Proposed value for connection_creation_rate is too large for an INT."),  # noqa: E501
        (entry({"ip": "no.such.host"}, connection_creation_rate=1.0), "no.such.host is not a valid IP or resolvable host."),  # noqa: E501
        (entry({"ip": "1.2.3.4", "user": "u"}, connection_creation_rate=1.0), "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),  # noqa: E501
    ],
)  # fmt: skip
def test_each_alteration_error_has_kafkas_message(bad, message):
    records, results = alter(ClientQuotas(), bad)
    assert records == []
    assert [r[1] for r in results] == [(INVALID, message)]


def test_duplicate_keys_and_entities_are_ignored_with_kafkas_message():
    records, results = alter(
        ClientQuotas(),
        Entry(
            entity=[EntityData(entity_type="user", entity_name="u")],
            ops=[Op(key=PRODUCE, value=1.0), Op(key=PRODUCE, value=2.0)],
        ),
        entry({"client-id": "c"}, consumer_byte_rate=5.0),
        entry({"client-id": "c"}, consumer_byte_rate=6.0),
    )
    assert records[0].value == 5.0 and len(records) == 1  # the first mention of c was written (as Kafka)
    assert results == [
        ({"user": "u"}, (INVALID, "Ignoring duplicate entity ClientQuotaEntity(entries={user=u})")),
        ({"client-id": "c"}, (INVALID, "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c})")),
    ]


def test_only_changes_and_removals_of_present_keys_are_written():
    quotas = ClientQuotas()
    records, results = alter(quotas, entry({"user": "u", "client-id": None}, producer_byte_rate=100.0))
    assert results == [({"client-id": None, "user": "u"}, None)]
    for record in records:
        quotas.replay(record)
    again, _ = alter(
        quotas, entry({"user": "u", "client-id": None}, producer_byte_rate=100.0, consumer_byte_rate=None)
    )
    assert again == []  # same value, and a removal of a key the entity lacks
    removal, _ = alter(quotas, entry({"user": "u", "client-id": None}, producer_byte_rate=None))
    assert [(r.key, r.remove) for r in removal] == [(PRODUCE, True)]
    quotas.replay(removal[0])
    assert len(quotas) == 0


# ---- over the wire ----------------------------------------------------------------------------------


def run_node(data_dir: Path, scenario):
    async def main():
        node = BrokerNode.from_config_file(None, {"node.id": "1", "log.dirs": str(data_dir)})
        host, port = await node.start("127.0.0.1", 0)
        try:
            async with await RawClient.connect(host, port, client_id="quota-tests") as client:
                return await scenario(client, node)
        finally:
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))


def described(response) -> list:
    assert (response.error_code, response.error_message) == (Errors.NONE, None)
    return sorted(
        (
            sorted((e.entity_type, e.entity_name or "") for e in entry.entity),
            {v.key: v.value for v in entry.values},
        )
        for entry in response.entries
    )


SETUP = [
    entry({"user": "alice"}, producer_byte_rate=1000.0),
    entry({"user": "alice", "client-id": "app"}, consumer_byte_rate=2000.0),
    entry({"user": None}, request_percentage=50.5),
    entry({"client-id": None}, producer_byte_rate=300.0),
    entry({"ip": "127.0.0.1"}, connection_creation_rate=10.0),
]


def describe(client, strict=False, **filters):
    components = [Component(entity_type=k, match_type=m, match=n) for k, (m, n) in filters.items()]
    return client.call(48, 1, DescribeClientQuotasRequest(components=components, strict=strict))


def test_describe_filters_match_exact_default_and_any(tmp_path):
    async def scenario(client, node):
        altered = await client.call(49, 1, AlterClientQuotasRequest(entries=SETUP))
        assert [e.error_code for e in altered.entries] == [Errors.NONE] * 5
        alice = await describe(client, user=(EXACT, "alice"))
        alice_strict = await describe(client, strict=True, user=(EXACT, "alice"))
        default_user = await describe(client, user=(DEFAULT, None))
        any_client = await describe(client, **{"client-id": (SPECIFIED, None)})
        everything = await describe(client)
        return alice, alice_strict, default_user, any_client, everything

    alice, strict, default_user, any_client, everything = run_node(tmp_path, scenario)
    assert described(alice) == [
        ([("client-id", "app"), ("user", "alice")], {"consumer_byte_rate": 2000.0}),
        ([("user", "alice")], {"producer_byte_rate": 1000.0}),
    ]
    assert described(strict) == [([("user", "alice")], {"producer_byte_rate": 1000.0})]
    assert described(default_user) == [([("user", "")], {"request_percentage": 50.5})]
    assert len(described(any_client)) == 2
    assert len(described(everything)) == 5


@pytest.mark.parametrize(
    "filters, code, message",
    [
        ({"": (EXACT, "x")}, INVALID, "Invalid empty entity type."),
        ({"group": (EXACT, "x")}, Errors.UNSUPPORTED_VERSION, "Unsupported entity type group"),
        ({"user": (EXACT, None)}, INVALID, "Request specified MATCH_TYPE_EXACT, but set match string to null."),  # noqa: E501
        ({"user": (DEFAULT, "x")}, INVALID, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),  # noqa: E501
        ({"user": (SPECIFIED, "x")}, INVALID, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."),  # noqa: E501
        ({"user": (7, None)}, INVALID, "Unknown match type 7"),
        ({"ip": (SPECIFIED, None), "user": (DEFAULT, None)}, INVALID, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."),  # noqa: E501
    ],
)  # fmt: skip
def test_describe_refuses_bad_filters_with_kafkas_messages(filters, code, message):
    quotas = ClientQuotas()
    components = [Component(entity_type=k, match_type=m, match=n) for k, (m, n) in filters.items()]
    from kconform.reference_broker.cluster_metadata.client_quotas import DescribeRefused

    with pytest.raises(DescribeRefused) as refused:
        quotas.describe(components, strict=False)
    assert (refused.value.code, str(refused.value)) == (code, message)


def test_a_refused_filter_fails_the_whole_response_and_a_repeated_type_too(tmp_path):
    async def scenario(client, node):
        twice = [
            Component(entity_type="user", match_type=SPECIFIED, match=None),
            Component(entity_type="user", match_type=DEFAULT, match=None),
        ]
        return await client.call(48, 0, DescribeClientQuotasRequest(components=twice))

    response = run_node(tmp_path, scenario)
    assert (response.error_code, response.error_message) == (
        INVALID,
        "Entity type user cannot appear more than once in the filter.",
    )
    assert response.entries is None


def test_validate_only_writes_nothing_and_quotas_survive_a_restart(tmp_path):
    async def first_life(client, node):
        dry = await client.call(49, 0, AlterClientQuotasRequest(entries=SETUP[:1], validate_only=True))
        assert [e.error_code for e in dry.entries] == [Errors.NONE]
        assert described(await describe(client)) == []
        await client.call(49, 0, AlterClientQuotasRequest(entries=SETUP))
        removal = entry({"client-id": None}, producer_byte_rate=None)
        return await client.call(49, 0, AlterClientQuotasRequest(entries=[removal]))

    async def second_life(client, node):
        return await describe(client)

    assert [e.error_code for e in run_node(tmp_path, first_life).entries] == [Errors.NONE]
    assert len(described(run_node(tmp_path, second_life))) == 4


# ---- enforcement, live ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_producer_over_its_byte_rate_is_throttled_to_the_quota(tmp_path):
    """200 KB/s for the producer's client id; producing as fast as it can for 8 s, the acknowledged rate
    over the last 5 s is within 20% of the quota and the producer saw throttle times."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    quota = 200_000.0

    async def main():
        node = BrokerNode.from_config_file(None, {"node.id": "1", "log.dirs": str(tmp_path)})
        host, port = await node.start("127.0.0.1", 0)
        try:
            async with await RawClient.connect(host, port, client_id="admin") as client:
                limit = entry({"client-id": "fast-producer"}, producer_byte_rate=quota)
                altered = await client.call(49, 1, AlterClientQuotasRequest(entries=[limit]))
                assert altered.entries[0].error_code == Errors.NONE
            return await asyncio.to_thread(_produce_flat_out, confluent_kafka, f"{host}:{port}")
        finally:
            await node.stop()

    acked, throttles = asyncio.run(asyncio.wait_for(main(), 40))
    start = acked[0][0]
    late = [size for at, size in acked if at >= start + 3.0]
    rate = sum(late) / (acked[-1][0] - (start + 3.0))
    assert abs(rate - quota) / quota < 0.2, f"{rate:.0f} B/s against a quota of {quota:.0f}"
    assert max(throttles) > 0


def _produce_flat_out(confluent_kafka, bootstrap: str):
    acked: list[tuple[float, int]] = []
    throttles: list[int] = []
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "fast-producer",
            "linger.ms": 5,
            "batch.size": 64 * 1024,
            "compression.type": "none",
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    payload = b"x" * 1000

    def delivered(err, msg):
        if err is None:
            acked.append((time.monotonic(), len(msg.value())))

    end = time.monotonic() + 8.0
    while time.monotonic() < end:
        try:
            producer.produce("quota-topic", payload, on_delivery=delivered)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    producer.flush(10)
    return acked, throttles
