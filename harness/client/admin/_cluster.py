"""The admin call on the cluster itself: DescribeCluster, or Metadata where a broker lacks it."""

from __future__ import annotations

from ._requests import DESCRIBE_CLUSTER, build_describe_cluster, cluster_from_metadata, read_cluster
from ._routing import AdminRouting, Outcome, plain_outcome
from ._types import ClusterDescription

__all__ = ["ClusterCalls"]


class ClusterCalls(AdminRouting):
    async def describe_cluster(
        self, *, include_fenced_brokers: bool = False, timeout_ms: int | None = None
    ) -> ClusterDescription:
        """DescribeCluster, or Metadata where a broker does not offer it (as Java falls back).
        ``include_fenced_brokers`` (KIP-1073) needs DescribeCluster v2: without it the call fails with
        NoCommonVersion, as Java's admin does (no fallback to Metadata for that option)."""

        async def attempt(keys: list[str]) -> dict[str, Outcome]:
            conn = await self.network.any_connection()
            if DESCRIBE_CLUSTER not in conn.versions and not include_fenced_brokers:
                return {"cluster": cluster_from_metadata(await self._topic_metadata([]))}
            version = conn.version_for(DESCRIBE_CLUSTER, floor=2 if include_fenced_brokers else None)
            request = build_describe_cluster(include_fenced_brokers)
            response = await conn.send(DESCRIBE_CLUSTER, request, version=version)
            if response.error_code:
                return {
                    "cluster": plain_outcome(response.error_code, response.error_message, "DescribeCluster")
                }
            return {"cluster": read_cluster(response)}

        result = await self._run("DescribeCluster", ["cluster"], attempt, timeout_ms, True)
        return result["cluster"]
