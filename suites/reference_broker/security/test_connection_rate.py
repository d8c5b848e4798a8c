"""Connection creation rates as Kafka's ``ConnectionQuotas`` enforces them (KIP-402, KIP-612): the
decisions with the clock passed in, then live on a node: over ``max.connection.creation.rate`` the
acceptor takes connections late, at the rate; over an address's ``connection_creation_rate`` quota a
connection is held unanswered and closed, and does not count against the address."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.codecs.errors import Errors
from kconform.codecs.framing import encode_request, size_prefixed
from kconform.codecs.messages import AlterClientQuotasRequest, ApiVersionsRequest
from kconform.codecs.metadata_records import ClientQuotaRecord
from kconform.reference_broker.cluster_metadata.client_quotas import ClientQuotas
from kconform.reference_broker.config import BrokerConfig, ConfigError
from kconform.reference_broker.connection_rates import INT_MAX, ConnectionRates, ip_connection_rate
from kconform.reference_broker.node import BrokerNode
from kconform.reference_broker.node_listeners import checked_listener_setup, connection_limits

from ...support.rawclient import RawClient

API_VERSIONS = size_prefixed(encode_request(18, 3, 1, "rate", ApiVersionsRequest(
    client_software_name="t", client_software_version="1")))  # fmt: skip


def no_resolver(host: str) -> str | None:
    return {"localhost": "127.0.0.1"}.get(host)


# ---- the decisions ------------------------------------------------------------------------------


def test_over_the_broker_rate_each_connection_waits_its_turn_at_the_rate():
    """5/s over 2 samples of 1 s: five pass at once; an acceptor that waits each delay out (as Kafka's
    does, one connection at a time) then takes one every 200 ms."""
    rates = ConnectionRates(broker_max=5, samples=2, window_ms=1000)
    now, accepted = 0, []
    for _ in range(9):
        now += rates.accept_delay_ms("PLAINTEXT", protected=False, now_ms=now)
        accepted.append(now)
    assert accepted == [0, 0, 0, 0, 0, 200, 400, 600, 800]


def test_the_listener_rate_defaults_apart_and_the_delay_is_the_longer_one_capped_at_a_window():
    rates = ConnectionRates(per_listener_max={"EXTERNAL": 1}, samples=2, window_ms=1000)
    delays = [rates.accept_delay_ms("EXTERNAL", protected=False, now_ms=0) for _ in range(4)]
    assert delays == [0, 1000, 1000, 1000]  # (2 - 1) / 1 * 1000 ms, then the cap of one window
    assert rates.accept_delay_ms("INTERNAL", protected=False, now_ms=0) == 0  # its own rate


def test_the_protected_listener_neither_counts_against_nor_waits_for_the_broker_rate():
    rates = ConnectionRates(broker_max=1, samples=2, window_ms=1000)
    assert rates.accept_delay_ms("CLIENTS", protected=False, now_ms=0) == 0
    for _ in range(5):
        assert rates.accept_delay_ms("REPLICATION", protected=True, now_ms=0) == 0
    assert rates.accept_delay_ms("CLIENTS", protected=False, now_ms=0) == 1000  # 2/s: one more only


def test_a_rate_of_zero_delays_every_connection_one_window():
    """Java divides by the zero bound to Infinity; the bounded throttle is then one window."""
    rates = ConnectionRates(broker_max=0, samples=11, window_ms=1000)
    assert rates.accept_delay_ms("PLAINTEXT", protected=False, now_ms=0) == 1000


def test_an_address_over_its_rate_is_refused_and_taken_back_from_every_rate():
    rates = ConnectionRates(broker_max=5, samples=2, window_ms=1000)
    for _ in range(5):
        assert rates.accept_delay_ms("L", protected=False, now_ms=0) == 0
        assert rates.ip_delay_ms("L", "10.0.0.1", 5, protected=False, now_ms=0) == 0
    assert rates.accept_delay_ms("L", protected=False, now_ms=0) == 200  # the 6th: 6/s over 1 s
    assert rates.ip_delay_ms("L", "10.0.0.1", 5, protected=False, now_ms=0) == 200
    # taken back from the broker's rate too: a 6th connection costs 200 ms again, not 400
    assert rates.accept_delay_ms("L", protected=False, now_ms=0) == 200
    assert rates.ip_delay_ms("L", "10.0.0.2", 5, protected=False, now_ms=0) == 0  # another address
    assert rates.ip_delay_ms("L", "10.0.0.1", INT_MAX, protected=False, now_ms=0) == 0  # no quota


def test_an_idle_address_starts_afresh_after_an_hour():
    rates = ConnectionRates(samples=2, window_ms=1000)
    for _ in range(3):
        rates.ip_delay_ms("L", "10.0.0.1", 1, protected=False, now_ms=0)
    assert rates.ip_delay_ms("L", "10.0.0.1", 1, protected=False, now_ms=1) > 0
    assert rates.ip_delay_ms("L", "10.0.0.1", 1, protected=False, now_ms=3_600_002) == 0


@given(
    bound=st.integers(1, 50),
    samples=st.integers(2, 12),
    gaps=st.lists(st.integers(0, 1500), min_size=1, max_size=40),
)
def test_an_acceptor_that_waits_out_each_delay_is_never_faster_than_the_bound(bound, samples, gaps):
    """Whatever the arrivals, an acceptor that waits out each delay takes no more connections in any
    stretch than the bound allows over it, beyond the allowance of a new rate (``samples - 1`` windows,
    ``Rate.windowSize``) and the one that tips it: the arithmetic of ``Rate`` and ``QuotaUtils`` together,
    the one-window cap on each delay included."""
    rates = ConnectionRates(broker_max=bound, samples=samples, window_ms=1000)
    now, taken = 0, []
    for gap in gaps:
        now += gap
        delay = rates.accept_delay_ms("L", protected=False, now_ms=now)
        assert 0 <= delay <= 1000
        now += delay
        taken.append(now)
    for i, first in enumerate(taken):
        for j in range(i, len(taken)):
            allowed = bound * (taken[j] - first) / 1000 + bound * (samples - 1) + 1
            assert j - i + 1 <= allowed


def test_the_ip_quota_is_the_address_own_else_the_default_entity():
    quotas = ClientQuotas()
    assert ip_connection_rate(quotas, "127.0.0.1", no_resolver) == INT_MAX
    for name, value in ((None, 7.0), ("localhost", 3.0), ("::1", 4.0)):
        entity = [ClientQuotaRecord.EntityData(entity_type="ip", entity_name=name)]
        quotas.replay(ClientQuotaRecord(entity=entity, key="connection_creation_rate", value=value))
    assert ip_connection_rate(quotas, "127.0.0.1", no_resolver) == 3  # a name is resolved, as Kafka does
    assert ip_connection_rate(quotas, "0:0::1", no_resolver) == 4  # addresses compare normalised
    assert ip_connection_rate(quotas, "10.1.1.1", no_resolver) == 7


def limits_for(**settings):
    config = BrokerConfig({"node.id": "1", "process.roles": "broker,controller", "log.dirs": "/tmp/unused",
                           "controller.listener.names": "CONTROLLER", **settings})  # fmt: skip
    return connection_limits(config, checked_listener_setup(config))


def test_listener_settings_fall_back_to_the_broker_wide_ones():
    """``ListenerConnectionQuota`` is configured with ``valuesWithPrefixOverride``: a listener without
    its own ``max.connection.creation.rate`` or ``max.connections`` takes the broker's."""
    limits = limits_for(**{
        "listeners": "PLAINTEXT://:0,EXTERNAL://:0,CONTROLLER://:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "max.connection.creation.rate": "30", "max.connections": "40",
        "listener.name.external.max.connection.creation.rate": "4",
        "quota.window.num": "3", "quota.window.size.seconds": "2",
    })  # fmt: skip
    assert limits.rates.broker_max == 30
    assert limits.rates.per_listener_max == {"PLAINTEXT": 30, "EXTERNAL": 4}
    assert limits.per_listener_max == {"PLAINTEXT": 40, "EXTERNAL": 40}
    assert (limits.rates.samples, limits.rates.window_ms) == (3, 2000)
    assert limits.listeners == 2 and limits.protected("PLAINTEXT")  # the controller listener is not one
    with pytest.raises(ConfigError, match="max.connection.creation.rate"):
        limits_for(**{"listener.name.plaintext.max.connection.creation.rate": "-1"})


# ---- live --------------------------------------------------------------------------------------


async def answered_at(host: str, port: int) -> float | None:
    """Connect, ask ApiVersions; when the answer came (monotonic), or None when the broker closed."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(API_VERSIONS)
        await writer.drain()
        size = await reader.read(4)
        return time.monotonic() if len(size) == 4 else None
    except ConnectionError:
        return None
    finally:
        writer.close()


def run_node(data_dir: Path, scenario, **settings):
    async def main():
        node = BrokerNode.from_config_file(None, {"node.id": "1", "log.dirs": str(data_dir), **settings})
        host, port = await node.start("127.0.0.1", 0)
        try:
            return await scenario(host, port)
        finally:
            await node.stop()

    return asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.slow
def test_over_the_broker_rate_connections_are_taken_late_at_the_rate(tmp_path):
    """5/s over 2 one-second samples: eight connections at once; five answered at once, then one
    every 200 ms from the first (the acceptor waits each out before taking the next)."""

    async def scenario(host, port):
        started = time.monotonic()
        times = await asyncio.gather(*(answered_at(host, port) for _ in range(8)))
        return started, times

    started, times = run_node(
        tmp_path, scenario, **{"max.connection.creation.rate": "5", "quota.window.num": "2"}
    )
    assert None not in times, "every connection is answered in the end"
    late = sorted(t - started for t in times)
    assert late[4] < 0.2, f"five within the rate are not delayed: {late}"
    for n, at in enumerate(late[5:], start=1):
        assert at >= 0.2 * n - 0.005, f"connection {n + 5} taken {at:.3f}s after the first; {late}"
    assert late[-1] < 0.6 + 1.5


@pytest.mark.slow
def test_over_its_ip_rate_a_connection_is_held_then_closed_and_not_counted(tmp_path):
    async def scenario(host, port):
        async with await RawClient.connect(host, port, client_id="admin") as admin:
            op = AlterClientQuotasRequest.OpData(key="connection_creation_rate", value=5.0, remove=False)
            ip = AlterClientQuotasRequest.EntityData(entity_type="ip", entity_name="127.0.0.1")
            altered = await admin.call(49, 1, AlterClientQuotasRequest(entries=[
                AlterClientQuotasRequest.EntryData(entity=[ip], ops=[op])]))  # fmt: skip
            assert altered.entries[0].error_code == Errors.NONE
            started = time.monotonic()
            first = await asyncio.gather(*(answered_at(host, port) for _ in range(5)))
            refused = await answered_at(host, port)
            closed_after = time.monotonic() - started
            again = await answered_at(host, port)
            return first, refused, closed_after, again

    first, refused, closed_after, again = run_node(tmp_path, scenario, **{"quota.window.num": "2"})
    assert None not in first
    assert refused is None, "the sixth connection in the first second is closed unanswered"
    assert closed_after >= 0.2 - 0.005, f"closed {closed_after:.3f}s after the first: not held"
    # 6 connections over 1.2 s is within 5/s only because the refused one was taken back
    assert again is not None
