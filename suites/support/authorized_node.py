"""One reference node per test module for the authorization rule suites: a SASL_PLAINTEXT listener whose
PLAIN users are ``admin`` (a super user) and the users given, each with the password ``<user>-secret``,
and Kafka's StandardAuthorizer; it runs on an event loop of its own thread."""

from __future__ import annotations

import asyncio
import threading

from kconform.reference_broker.node import BrokerNode

from .sasl_raw import sasl_client

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def plain_jaas(users: list[str]) -> str:
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret" '
        + " ".join(f'user_{user}="{user}-secret"' for user in ["admin", *users] if user)
        + ";"
    )


class LiveNode:
    """A node on an event loop of its own thread, so that one node serves the whole module."""

    def __init__(self, data_dir, users: list[str]) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        props = {
            "node.id": "1",
            "log.dirs": str(data_dir),
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(users),
            "authorizer.class.name": STANDARD,
            "super.users": "User:admin",
        }
        self.node = BrokerNode.from_config_file(None, props)
        self.run(self.node.start())
        bound = {li.name: (li.host, li.port) for li in self.node.listeners.bound}
        self.sasl_address = bound["SASL_PLAINTEXT"]

    def run(self, coro, timeout: float = 60):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, user: str, api_key: int, version: int, body):
        async def exchange():
            client = await sasl_client(*self.sasl_address, user, f"{user}-secret")
            async with client:
                return await client.call(api_key, version, body, timeout=20)

        return self.run(exchange())

    def close(self) -> None:
        try:
            self.run(self.node.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
