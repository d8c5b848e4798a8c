"""The admin calls on configs: a broker's own configs at that broker, every other resource's at any."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import ClientError
from ._checks import check_config_resources
from ._requests import (
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
    build_describe_configs,
    build_incremental_alter_configs,
    read_config_entry,
)
from ._routing import AdminRouting, Outcome, plain_outcome
from ._types import AlterConfigOp, ConfigEntry, ConfigResource

__all__ = ["ConfigCalls"]


class ConfigCalls(AdminRouting):
    async def describe_configs(
        self,
        resources: Iterable[ConfigResource],
        *,
        include_synonyms: bool = False,
        include_documentation: bool = False,
        timeout_ms: int | None = None,
        raise_errors: bool = False,
    ) -> dict[ConfigResource, dict[str, ConfigEntry] | ClientError]:
        resources = check_config_resources(resources)

        async def send(node: int | None, batch: list[ConfigResource]) -> dict[ConfigResource, Outcome]:
            conn = await self._connection(node)
            version = conn.version_for(DESCRIBE_CONFIGS)
            request = build_describe_configs(batch, include_synonyms, include_documentation)
            response = await conn.send(DESCRIBE_CONFIGS, request, version=version)
            wanted = {(int(r.type), r.name): r for r in batch}
            outcomes: dict[ConfigResource, Outcome] = {}
            for result in response.results:
                resource = wanted.get((result.resource_type, result.resource_name))
                if resource is None:
                    continue
                if result.error_code:
                    outcomes[resource] = plain_outcome(
                        result.error_code, result.error_message, f"describe configs of {resource.name!r}"
                    )
                else:
                    outcomes[resource] = {
                        e.name: read_config_entry(e, resource, version) for e in result.configs
                    }
            return outcomes

        return await self._run_per_config_node("DescribeConfigs", resources, send, timeout_ms, raise_errors)

    async def incremental_alter_configs(
        self,
        changes: Mapping[ConfigResource, Iterable[AlterConfigOp]],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
        raise_errors: bool = False,
    ) -> dict[ConfigResource, None | ClientError]:
        ops = {resource: list(resource_ops) for resource, resource_ops in changes.items()}
        resources = check_config_resources(ops)
        for resource, resource_ops in ops.items():
            for op in resource_ops:
                if not isinstance(op, AlterConfigOp) or not op.name:
                    raise ValueError(f"{resource}: {op!r} is not an AlterConfigOp with a config name")

        async def send(node: int | None, batch: list[ConfigResource]) -> dict[ConfigResource, Outcome]:
            conn = await self._connection(node)
            version = conn.version_for(INCREMENTAL_ALTER_CONFIGS)
            request = build_incremental_alter_configs(batch, ops, validate_only)
            response = await conn.send(INCREMENTAL_ALTER_CONFIGS, request, version=version)
            wanted = {(int(r.type), r.name): r for r in batch}
            outcomes: dict[ConfigResource, Outcome] = {}
            for result in response.responses:
                resource = wanted.get((result.resource_type, result.resource_name))
                if resource is not None:
                    outcomes[resource] = plain_outcome(
                        result.error_code, result.error_message, f"alter configs of {resource.name!r}"
                    )
            return outcomes

        return await self._run_per_config_node(
            "IncrementalAlterConfigs", resources, send, timeout_ms, raise_errors
        )
