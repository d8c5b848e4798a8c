"""The admin principal's part of ``kconform diff-acls`` on one target: create the set-up's resources and
ACLs, wait until the broker enforces them, and take everything away again at the end. Every step goes
through the protocol (CreateTopics, OffsetCommit, InitProducerId, CreateAcls, DescribeAcls, DeleteAcls,
DeleteGroups, DeleteTopics), so a bootstrap target is left as found."""

from __future__ import annotations

import asyncio
import time

from kconform.codecs.errors import error_for
from kconform.codecs.messages import (
    CreateAclsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteGroupsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    InitProducerIdRequest,
    OffsetCommitRequest,
)
from kconform.reference_broker.security.acls import AclBinding

from ..client.errors import ClientError
from ..client.network import NetworkClient

__all__ = ["AclAdmin", "SetupFailed", "every_acl"]

# Versions whose request layouts the bodies here are written for (later ones name topics by id).
VERSION_CAPS = {0: 9, 1: 12, 3: 12, 8: 8, 9: 8, 19: 5, 20: 5}
_TOPIC_ALREADY_EXISTS = 36


def every_acl() -> DescribeAclsRequest:
    """DescribeAcls matching every ACL: ANY resource type, pattern, operation and permission (1), no
    name, principal or host filter."""
    return DescribeAclsRequest(
        resource_type_filter=1,
        resource_name_filter=None,
        pattern_type_filter=1,
        principal_filter=None,
        host_filter=None,
        operation=1,
        permission_type=1,
    )


class SetupFailed(Exception):
    """The target would not take the set-up (no authorizer, the admin not allowed ...)."""


def _acl_key(binding: AclBinding) -> tuple:
    return (
        int(binding.resource_type),
        binding.resource_name,
        int(binding.pattern_type),
        binding.principal,
        binding.host,
        int(binding.operation),
        int(binding.permission),
    )


class AclAdmin:
    def __init__(self, bootstrap: str, security, *, timeout: float = 20.0) -> None:
        self.client = NetworkClient(bootstrap, security=security, version_caps=dict(VERSION_CAPS))
        self.timeout = timeout
        self.notes: list[str] = []

    async def close(self) -> None:
        await self.client.close()

    async def create_topics(self, names: list[str]) -> None:
        for name in names:
            await self.create_topic(name)

    async def create_topic(self, name: str) -> None:
        """Create ``name`` (one partition) and wait until metadata shows it; a deletion still under way
        answers TOPIC_ALREADY_EXISTS for a moment, so that is asked again."""
        deadline = time.monotonic() + self.timeout
        while True:
            topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=-1)
            answer = await self.client.send_any(19, CreateTopicsRequest(topics=[topic], timeout_ms=10_000))
            code = answer.topics[0].error_code
            if code == 0:
                break
            if code != _TOPIC_ALREADY_EXISTS or time.monotonic() > deadline:
                raise SetupFailed(
                    f"creating topic {name}: {error_for(code).name} {answer.topics[0].error_message or ''}"
                )
            await asyncio.sleep(0.2)
        await self.client.wait_for_topic(name, self.timeout)

    async def create_groups(self, groups: list[str], topic: str | None) -> None:
        """A group exists once it holds an offset: commit offset 0 of ``topic`` as a simple consumer."""
        if topic is None:
            if groups:
                self.notes.append("groups not created: the set-up has no topic to commit an offset of")
            return
        part = OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)
        for group in groups:
            request = OffsetCommitRequest(
                group_id=group,
                generation_id_or_member_epoch=-1,
                member_id="",
                topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[part])],
            )
            await self._to_coordinator(group, 0, 8, request, lambda r: r.topics[0].partitions[0].error_code)

    async def create_transactional_ids(self, ids: list[str]) -> None:
        for txn in ids:
            request = InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000)
            await self._to_coordinator(txn, 1, 22, request, lambda r: r.error_code)

    async def _to_coordinator(self, key: str, key_type: int, api_key: int, request, code_of) -> None:
        kind = "group" if key_type == 0 else "transactional id"
        try:
            node = await self.client.find_coordinator(key, key_type, timeout=self.timeout)
            code = code_of(await self.client.send(node, api_key, request))
        except ClientError as exc:
            self.notes.append(f"{kind} {key} not created: {exc}")
            return
        if code:
            self.notes.append(f"{kind} {key} not created: {error_for(code).name}")

    async def create_acls(self, bindings: list[AclBinding]) -> None:
        creations = [
            CreateAclsRequest.AclCreation(
                resource_type=rt,
                resource_name=name,
                resource_pattern_type=pt,
                principal=principal,
                host=host,
                operation=op,
                permission_type=perm,
            )
            for rt, name, pt, principal, host, op, perm in map(_acl_key, bindings)
        ]
        answer = await self.client.send_any(30, CreateAclsRequest(creations=creations))
        refused = [(b, r) for b, r in zip(bindings, answer.results, strict=False) if r.error_code]
        if refused:
            b, result = refused[0]
            first = f"{b.permission.name} {b.principal} {b.operation.name} on {b.resource_type.name}"
            first += f" {b.resource_name}"
            raise SetupFailed(
                f"CreateAcls refused {len(refused)} of {len(bindings)} ACLs, first {first}: "
                f"{error_for(result.error_code).name} {result.error_message or ''}".rstrip()
            )

    async def wait_for_acls(self, bindings: list[AclBinding]) -> None:
        """Until DescribeAcls lists every binding: Kafka applies ACLs from the metadata log, so a broker
        enforces them a moment after CreateAcls answers (StandardAuthorizer's loading)."""
        wanted, deadline = {_acl_key(b) for b in bindings}, time.monotonic() + self.timeout
        every = every_acl()
        while True:
            answer = await self.client.send_any(29, every)
            listed = {
                (
                    r.resource_type,
                    r.resource_name,
                    r.pattern_type,
                    a.principal,
                    a.host,
                    a.operation,
                    a.permission_type,
                )
                for r in answer.resources
                for a in r.acls
            }
            if wanted <= listed:
                return
            if time.monotonic() > deadline:
                raise SetupFailed(f"{len(wanted - listed)} ACLs created are still not listed by DescribeAcls")
            await asyncio.sleep(0.2)

    async def delete_acls(self, bindings: list[AclBinding]) -> None:
        filters = [
            DeleteAclsRequest.DeleteAclsFilter(
                resource_type_filter=rt,
                resource_name_filter=name,
                pattern_type_filter=pt,
                principal_filter=principal,
                host_filter=host,
                operation=op,
                permission_type=perm,
            )
            for rt, name, pt, principal, host, op, perm in map(_acl_key, bindings)
        ]
        if not filters:
            return
        try:
            answer = await self.client.send_any(31, DeleteAclsRequest(filters=filters))
        except ClientError as exc:
            self.notes.append(f"the set-up's ACLs may be left behind: DeleteAcls failed ({exc})")
            return
        failed = [r for r in answer.filter_results if r.error_code]
        if failed:
            self.notes.append(
                f"{len(failed)} of the set-up's ACLs were not deleted: {error_for(failed[0].error_code).name}"
            )

    async def delete_resources(self, topics: list[str], groups: list[str]) -> None:
        """Groups first (their offsets name the topics), then topics; what stays is noted, not raised."""
        for group in groups:
            try:
                node = await self.client.find_coordinator(group, 0, timeout=self.timeout)
                answer = await self.client.send(node, 42, DeleteGroupsRequest(groups_names=[group]))
                code = answer.results[0].error_code
            except ClientError as exc:
                code, detail = -1, str(exc)
            else:
                detail = error_for(code).name
            if code not in (0, 69):  # 69: GROUP_ID_NOT_FOUND, it never came to be
                self.notes.append(f"group {group} left behind: {detail}")
        if topics:
            try:
                answer = await self.client.send_any(
                    20, DeleteTopicsRequest(topic_names=topics, timeout_ms=10_000)
                )
            except ClientError as exc:
                self.notes.append(f"topics {', '.join(topics)} may be left behind: {exc}")
                return
            for result in answer.responses:
                if result.error_code not in (0, 3):
                    self.notes.append(f"topic {result.name} left behind: {error_for(result.error_code).name}")
