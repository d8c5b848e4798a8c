"""A controller node: the ``Controller``, its listener (``process.roles=controller``) and its
periodic work. In combined mode (``process.roles=broker,controller``, the single node) the broker
holds one without a listener and calls its handlers in process (``call``)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from ..clock import Clock, SystemClock
from ..config import BrokerConfig, check_supported
from ..dispatch import Dispatcher, RequestContext
from ..meta_properties import load_or_create
from ..planted import install as install_planted_bugs
from ..purgatory import Purgatory
from ..security.listener_security import ListenerSecurity, listener_security
from ..security.peer_security import controller_listener
from ..security.principals import ANONYMOUS, KafkaPrincipal
from ..server import BrokerServer
from .controller import Controller
from .handlers import CONTROLLER_HANDLERS

__all__ = ["ControllerNode"]

log = logging.getLogger(__name__)
_TICK_S = 0.25


class ControllerNode:
    role = "controller"

    def __init__(
        self,
        config: BrokerConfig,
        *,
        clock: Clock | None = None,
        advertised: tuple[str, int] | None = None,
        purgatory: Purgatory | None = None,
        cluster_id: str | None = None,
    ) -> None:
        check_supported(config)  # a setting it does not implement stops it here, before any side effect
        install_planted_bugs()  # test only: KCONFORM_PLANTED_BUGS (planted.py); nothing when unset
        self.config = config
        self.clock = clock or SystemClock()
        self.node_id = int(config["node.id"])
        data_dir = Path(config.log_dirs[0])
        data_dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = cluster_id or load_or_create(data_dir, self.node_id)
        self.purgatory = purgatory or Purgatory()
        self.controller = Controller(config, data_dir, clock=self.clock, purgatory=self.purgatory)
        self.dispatcher = Dispatcher(self, None, CONTROLLER_HANDLERS)
        self._advertised = advertised
        self._server: BrokerServer | None = None
        self._bound: tuple[str, int] | None = None
        self._ticker: asyncio.Task | None = None

    @property
    def advertised_address(self) -> tuple[str, int]:
        if self._advertised:
            return self._advertised
        if self._bound is None:
            return ("localhost", -1)
        host, port = self._bound
        return ("localhost" if host in ("0.0.0.0", "::") else host), port

    async def start(self, host: str | None = None, port: int = 0) -> tuple[str, int] | None:
        """Start the periodic work and, with a host, the listener; returns the bound address."""
        if host is not None:
            await self.start_listener(host, port)
        self._ticker = asyncio.create_task(self._tick())
        return self._bound

    async def start_listener(self, host: str | None, port: int) -> tuple[str, int]:
        """Accept requests for the controller at host:port, secured as the controller listener's protocol
        and settings say (TLS, SASL with the mechanisms and JAAS of ``listener.name.<controller>.*``)."""
        if self._server is None:
            self._server = BrokerServer(
                self.dispatcher,
                max_request_bytes=int(self.config["socket.request.max.bytes"]),
                idle_timeout_s=int(self.config["connections.max.idle.ms"]) / 1000,
            )
        self._bound = await self._server.start(host, port, self._listener_security())
        return self._bound

    def _listener_security(self) -> ListenerSecurity:
        """The controller listener's security, or ConfigError naming what cannot be honoured."""
        controller = self.controller
        return listener_security(
            self.config,
            controller_listener(self.config),
            scram_credential=lambda mechanism, user: controller.image.scram_credential(mechanism, user),
            now_ms=self.clock.now_ms,
            serves=self.dispatcher.serves,
        )

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
        if self._server is not None:
            await self._server.stop()
        self.controller.close()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(_TICK_S)
            try:
                self.controller.tick()
            except Exception:  # the controller's periodic work must outlive one bad pass
                log.exception("controller periodic work failed")

    @staticmethod
    def version_for(api_key: int) -> int:
        return CONTROLLER_HANDLERS[api_key].max_version

    def connection_closed(self, connection_id: int) -> None:
        pass

    async def call(
        self,
        api_key: int,
        request,
        *,
        version: int | None = None,
        peer: str = "in-process",
        principal: KafkaPrincipal = ANONYMOUS,
    ):
        """Handle a request from the broker in this process, as if it had come over the listener in an
        Envelope: authorized as the client's ``principal`` at the client's ``peer`` address."""
        handler = CONTROLLER_HANDLERS[api_key]
        version = handler.max_version if version is None else version
        ctx = RequestContext(None, api_key, version, 0, "in-process broker", peer, -1)
        ctx.principal = principal
        return await handler.fn(self, ctx, request)
