"""CreateAcls, DescribeAcls and DeleteAcls bodies to ACL values and back, with the checks Kafka makes
while it reads them (shared by the broker's and the controller's handlers).

- Parsing (``CreateAclsRequest.validate``, ``DescribeAclsRequest.normalizeAndValidate``,
  ``DeleteAclsRequest.normalizeAndValidate``): a code 0 (UNKNOWN) anywhere, or at v0 a pattern type
  other than LITERAL (ANY filters become LITERAL), fails the parse, and Kafka closes the connection
  (``RequestContext.parseRequest``): ``MalformedAclRequest``.
- Building a creation's binding (``CreateAclsRequest.aclBinding``): ``ResourcePattern`` refuses the
  resource type ANY and the pattern types ANY and MATCH, ``AccessControlEntry`` the operation and the
  permission ANY; that IllegalArgumentException fails the whole request, every creation getting
  UNKNOWN_SERVER_ERROR without a message: ``UnbuildableBinding``. Codes Kafka does not know (say 99)
  read as UNKNOWN and are left for ``validate_new_binding`` to refuse.
- ``described_resources`` is ``DescribeAclsResponse.aclsResources``: bindings grouped by resource
  pattern, each entry once."""

from __future__ import annotations

from kconform.codecs.messages import CreateAclsResponse, DeleteAclsResponse, DescribeAclsResponse

from .security.acls import AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType

__all__ = [
    "MalformedAclRequest",
    "UnbuildableBinding",
    "creation_bindings",
    "creation_error_response",
    "delete_filters",
    "describe_filter",
    "described_resources",
    "filter_error_response",
    "matching_acl",
]

_UNKNOWN = 0


class MalformedAclRequest(ValueError):
    """Kafka fails to parse the request and closes the connection."""


class UnbuildableBinding(ValueError):
    """A creation Kafka cannot make an ``AclBinding`` of: the whole request fails."""


# AclApis refusing a principal without the cluster operation: ``authorizeClusterOperation``'s text
NOT_AUTHORIZED = "Request is not authorized."


def _pattern_type(code: int, version: int, *, is_filter: bool) -> int:
    if version == 0:
        if is_filter and code == PatternType.ANY:
            return PatternType.LITERAL  # older brokers knew LITERAL only, which ANY then means
        if code != PatternType.LITERAL:
            raise MalformedAclRequest(f"version 0 only supports literal resource pattern types, not {code}")
    return code


def _check_known(*codes: int) -> None:
    if _UNKNOWN in codes:
        raise MalformedAclRequest("the request contains UNKNOWN elements")


def creation_bindings(request, version: int) -> list[AclBinding]:
    """The bindings of a CreateAcls request, in order."""
    for c in request.creations:
        _pattern_type(c.resource_pattern_type, version, is_filter=False)
        _check_known(c.resource_pattern_type, c.resource_type, c.permission_type, c.operation)
    bindings = []
    for c in request.creations:
        binding = AclBinding.of(
            c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host, c.operation,
            c.permission_type,
        )  # fmt: skip
        if (
            binding.resource_type == ResourceType.ANY
            or binding.pattern_type in (PatternType.ANY, PatternType.MATCH)
            or binding.operation == Operation.ANY
            or binding.permission == Permission.ANY
        ):
            raise UnbuildableBinding(f"{binding} is a filter, not a binding")
        bindings.append(binding)
    return bindings


def describe_filter(request, version: int) -> AclFilter:
    pattern = _pattern_type(request.pattern_type_filter, version, is_filter=True)
    _check_known(pattern, request.resource_type_filter, request.permission_type, request.operation)
    return AclFilter.of(
        request.resource_type_filter, request.resource_name_filter, pattern, request.principal_filter,
        request.host_filter, request.operation, request.permission_type,
    )  # fmt: skip


def delete_filters(request, version: int) -> list[AclFilter]:
    patterns = [_pattern_type(f.pattern_type_filter, version, is_filter=True) for f in request.filters]
    for f, pattern in zip(request.filters, patterns, strict=True):
        _check_known(pattern, f.resource_type_filter, f.operation, f.permission_type)
    return [
        AclFilter.of(
            f.resource_type_filter,
            f.resource_name_filter,
            pattern,
            f.principal_filter,
            f.host_filter,
            f.operation,
            f.permission_type,
        )  # fmt: skip
        for f, pattern in zip(request.filters, patterns, strict=True)
    ]


def described_resources(bindings) -> list[DescribeAclsResponse.DescribeAclsResource]:
    """Bindings grouped by (resource type, name, pattern type), in the order each group first appears."""
    groups: dict[tuple, dict[tuple, None]] = {}
    for b in bindings:
        pattern = (b.resource_type, b.resource_name, b.pattern_type)
        groups.setdefault(pattern, {})[(b.principal, b.host, b.operation, b.permission)] = None
    return [
        DescribeAclsResponse.DescribeAclsResource(
            resource_type=resource_type,
            resource_name=name,
            pattern_type=pattern_type,
            acls=[
                DescribeAclsResponse.AclDescription(
                    principal=principal, host=host, operation=operation, permission_type=permission
                )
                for principal, host, operation, permission in entries
            ],
        )
        for (resource_type, name, pattern_type), entries in groups.items()
    ]


def matching_acl(binding: AclBinding) -> DeleteAclsResponse.DeleteAclsMatchingAcl:
    """``DeleteAclsResponse.matchingAcl``: a deleted binding, its own error NONE with a null message."""
    return DeleteAclsResponse.DeleteAclsMatchingAcl(
        error_code=0,
        error_message=None,
        resource_type=binding.resource_type,
        resource_name=binding.resource_name,
        pattern_type=binding.pattern_type,
        principal=binding.principal,
        host=binding.host,
        operation=binding.operation,
        permission_type=binding.permission,
    )


def creation_error_response(request, code: int, message: str | None) -> CreateAclsResponse:
    """``CreateAclsRequest.getErrorResponse``: the same error for every creation."""
    Result = CreateAclsResponse.AclCreationResult
    return CreateAclsResponse(
        results=[Result(error_code=code, error_message=message) for _ in request.creations]
    )


def filter_error_response(request, code: int, message: str | None) -> DeleteAclsResponse:
    """``DeleteAclsRequest.getErrorResponse``: the same error for every filter."""
    Result = DeleteAclsResponse.DeleteAclsFilterResult
    return DeleteAclsResponse(
        filter_results=[Result(error_code=code, error_message=message) for _ in request.filters]
    )
