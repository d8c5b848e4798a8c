"""A broker's copy of ``__cluster_metadata`` (a KRaft observer): it fetches the controller's log from
its own log end, with its node id as the replica and the cluster id, waiting up to 500 ms for new
records (``KafkaRaftClient``'s fetch), appends what arrives and replays it into its image. A lost
controller is retried every ``_RETRY_S``; the broker goes on serving from the image it has.

``discover_cluster_id`` asks the controller for the cluster id (DescribeCluster to a controller
endpoint, KIP-919) when a broker starts on an empty data directory."""

from __future__ import annotations

import asyncio
import logging

from kconform.codecs.errors import Errors
from kconform.codecs.messages import ApiVersionsRequest, DescribeClusterRequest, FetchRequest
from kconform.codecs.metadata_log import METADATA_TOPIC, METADATA_TOPIC_ID

from .cluster_metadata import CorruptMetadataLog, MetadataLog
from .interbroker import NodeChannel, as_replica

__all__ = ["MetadataFollower", "discover_cluster_id"]

log = logging.getLogger(__name__)
FETCH, DESCRIBE_CLUSTER = 1, 60
_MAX_WAIT_MS = 500
_MAX_BYTES = 8 * 1024 * 1024
_RETRY_S = 0.2
_CONTROLLER_ENDPOINTS = 2


async def discover_cluster_id(channel: NodeChannel, timeout_s: float) -> str:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout_s
    last = "no answer"
    while loop.time() < end:
        try:
            response = await channel.send(
                DESCRIBE_CLUSTER,
                DescribeClusterRequest(endpoint_type=_CONTROLLER_ENDPOINTS),
                timeout_s=5.0,
            )
            if response.error_code == Errors.NONE and response.cluster_id:
                return response.cluster_id
            last = f"error {response.error_code}"
        except ConnectionError as exc:
            last = str(exc)
        await asyncio.sleep(_RETRY_S)
    raise RuntimeError(f"could not learn the cluster id from the controller: {last}")


class MetadataFollower:
    def __init__(self, metadata: MetadataLog, channel: NodeChannel, node_id: int) -> None:
        self._metadata = metadata
        self._channel = channel
        self._node_id = node_id
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="metadata-follower")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def _request(self, version: int) -> FetchRequest:
        log_ = self._metadata
        return FetchRequest(
            cluster_id=None,
            replica_state=FetchRequest.ReplicaState(),
            max_wait_ms=_MAX_WAIT_MS,
            min_bytes=0,
            max_bytes=_MAX_BYTES,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                FetchRequest.FetchTopic(
                    topic=METADATA_TOPIC,
                    topic_id=METADATA_TOPIC_ID,
                    partitions=[
                        FetchRequest.FetchPartition(
                            partition=0,
                            current_leader_epoch=-1,
                            fetch_offset=log_.end_offset,
                            last_fetched_epoch=log_.latest_epoch,
                            log_start_offset=0,
                            partition_max_bytes=_MAX_BYTES,
                        )
                    ],
                )
            ],
            forgotten_topics_data=[],
            rack_id="",
        )

    async def _run(self) -> None:
        while True:
            try:
                await self._fetch_once()
            except asyncio.CancelledError:
                raise
            except ConnectionError as exc:
                log.info("metadata fetch from the controller failed: %s", exc)
                await asyncio.sleep(_RETRY_S)
            except CorruptMetadataLog:
                log.exception("the metadata log cannot be followed; stopping the metadata fetches")
                return
            except Exception:
                log.exception("metadata fetch failed")
                await asyncio.sleep(_RETRY_S)

    async def _fetch_once(self) -> None:
        try:
            version = self._channel.version_for(FETCH)
        except ConnectionError:
            version = None
        if version is None:  # not connected yet: ApiVersions first
            await self._channel.send(18, ApiVersionsRequest(), timeout_s=10)
            version = self._channel.version_for(FETCH)
        request = as_replica(self._request(version), version, self._node_id)
        response = await self._channel.send(
            FETCH, request, version=version, timeout_s=_MAX_WAIT_MS / 1000 + 10
        )
        if response.error_code != Errors.NONE:
            log.warning("metadata fetch: error %d", response.error_code)
            await asyncio.sleep(_RETRY_S)
            return
        for topic in response.responses:
            for data in topic.partitions:
                if data.error_code != Errors.NONE:
                    log.warning("metadata fetch of %s: error %d", METADATA_TOPIC, data.error_code)
                    await asyncio.sleep(_RETRY_S)
                    continue
                if data.records:
                    self._metadata.append_replicated(
                        data.records.read() if hasattr(data.records, "read") else data.records,
                        high_watermark=data.high_watermark,
                    )
