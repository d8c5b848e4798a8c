"""When a docker target's cluster is up: every broker answers ApiVersions and the Metadata of one of
them lists them all. The probes, clock and sleep are passed in, so the polling is tested without Kafka."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from .base import TargetError, fetch_api_versions

__all__ = ["cluster_ready", "fetch_broker_ids", "wait_until_ready"]


async def fetch_broker_ids(address: str, timeout: float = 10.0, *, security=None) -> set[int]:
    """The node ids a broker's Metadata answer lists (``security``: a secured clients' listener)."""
    from kconform.codecs.messages import MetadataRequest

    from ..client.connection import BrokerConnection
    from ..client.errors import ClientError
    from ..client.network import parse_bootstrap

    host, port = parse_bootstrap(address)[0]
    try:
        conn = await BrokerConnection.connect(
            host, port, connect_timeout=timeout, request_timeout=timeout, security=security
        )
    except ClientError as exc:
        raise TargetError(f"no Kafka-protocol answer at {address}: {exc}") from exc
    try:
        version = conn.version_for(3)
        request = MetadataRequest(topics=[], allow_auto_topic_creation=False)  # brokers only (v0: all topics)
        response = await conn.send(3, request, version=version)
        return {b.node_id for b in response.brokers}
    except ClientError as exc:
        raise TargetError(f"Metadata from {address} failed: {exc}") from exc
    finally:
        await conn.wait_closed()


async def cluster_ready(
    addresses: dict[int, str], *, fetch_versions=fetch_api_versions, fetch_ids=fetch_broker_ids, security=None
) -> str | None:
    """None when every broker answers ApiVersions and Metadata lists all of them; else what is missing.
    ``security`` reaches a secured clients' listener."""
    for node_id, address in addresses.items():
        try:
            await fetch_versions(address, 5.0, security=security)
        except (TargetError, OSError, TimeoutError) as exc:
            return f"broker {node_id} at {address} does not answer ApiVersions yet ({exc})"
    first = next(iter(addresses.values()))
    try:
        listed = await fetch_ids(first, 5.0, security=security)
    except (TargetError, OSError, TimeoutError) as exc:
        return f"Metadata from {first} failed ({exc})"
    missing = sorted(set(addresses) - set(listed))
    if missing:
        return f"Metadata lists brokers {sorted(listed)}, still missing {missing}"
    return None


def wait_until_ready(
    addresses: dict[int, str],
    *,
    timeout: float,
    check=None,
    alive=None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    interval: float = 1.0,
    security=None,
) -> None:
    """Poll ``check`` (``cluster_ready`` by default) until it reports nothing missing; raises TargetError
    on timeout, or as soon as ``alive()`` returns a reason the cluster cannot come up."""
    check = check or (lambda addrs: asyncio.run(cluster_ready(addrs, security=security)))
    deadline = clock() + timeout
    last = "not polled yet"
    while True:
        if alive is not None:
            dead = alive()
            if dead:
                raise TargetError(dead)
        last = check(addresses) or ""
        if not last:
            return
        if clock() >= deadline:
            raise TargetError(f"the cluster was not ready after {timeout:g} s: {last}")
        sleep(interval)
