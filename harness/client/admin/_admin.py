"""``Admin``: the admin client, its calls gathered from one mixin per API family."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ..config import AdminConfig
from ..network import NetworkClient
from ._cluster import ClusterCalls
from ._configs import ConfigCalls
from ._groups import GroupCalls
from ._partitions import PartitionCalls
from ._topics import TopicCalls

__all__ = ["Admin"]


class Admin(TopicCalls, ConfigCalls, GroupCalls, PartitionCalls, ClusterCalls):
    """``async with Admin({"bootstrap.servers": "host:port"}) as admin: await admin.create_topics(...)``"""

    def __init__(self, config: Mapping[str, Any] | AdminConfig, *, clock=time.monotonic) -> None:
        self.config = config if isinstance(config, AdminConfig) else AdminConfig(config)
        self.default_api_timeout_ms = self.config["default.api.timeout.ms"]
        self.clock = clock
        self.network = NetworkClient.from_config(self.config, clock=clock)

    async def start(self) -> Admin:
        await self.network.refresh_metadata()
        return self

    async def close(self) -> None:
        await self.network.close()

    async def __aenter__(self) -> Admin:
        return await self.start()

    async def __aexit__(self, *exc_info) -> None:
        await self.close()
