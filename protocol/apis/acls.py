"""ACLs over the wire: DescribeAcls (29), CreateAcls (30) and DeleteAcls (31), with the conversions between their
messages and protocol/acls.py's bindings and filters.

On Kafka's wire: v0-3 of each (a pattern type from v1, flexible from v2), as kafka-acls and the admin clients send
them.
"""

from __future__ import annotations

from dataclasses import field

from protocol.acls import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclFormatError,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from protocol.apis.api import Api, ApiKey, error_only
from protocol.codec import Int8, Int16, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec


@message
class AclFilter:
    """Which bindings to describe or delete: None and ANY (1) take every value, MATCH (2) patterns take every
    pattern that applies to the name."""

    resource_type_filter: Int8
    resource_name_filter: str | None = None
    pattern_type_filter: Int8 = PatternType.LITERAL
    principal_filter: str | None = None
    host_filter: str | None = None
    operation: Int8
    permission_type: Int8


@message
class AclEntryDescription:
    """A binding, as DescribeAcls and DeleteAcls answer it."""

    resource_type: Int8
    resource_name: str
    pattern_type: Int8 = PatternType.LITERAL
    principal: str
    host: str
    operation: Int8
    permission_type: Int8


def to_filter(f: AclFilter) -> AclBindingFilter:
    """The binding filter of a message; AclFormatError for an unknown code."""
    try:
        return AclBindingFilter(
            ResourcePatternFilter(ResourceType(f.resource_type_filter), f.resource_name_filter,
                                  PatternType(f.pattern_type_filter)),
            AccessControlEntryFilter(f.principal_filter, f.host_filter, AclOperation(f.operation),
                                     AclPermissionType(f.permission_type)))
    except ValueError as e:
        raise AclFormatError(f"Invalid filter: {e}") from None


def from_filter(f: AclBindingFilter) -> AclFilter:
    return AclFilter(resource_type_filter=f.pattern.resource_type, resource_name_filter=f.pattern.name,
                     pattern_type_filter=f.pattern.pattern_type, principal_filter=f.entry.principal,
                     host_filter=f.entry.host, operation=f.entry.operation, permission_type=f.entry.permission_type)


def to_binding(d: AclEntryDescription) -> AclBinding:
    """The binding of a message; AclFormatError for an unknown code."""
    try:
        return AclBinding(ResourcePattern(ResourceType(d.resource_type), d.resource_name, PatternType(d.pattern_type)),
                          AccessControlEntry(d.principal, d.host, AclOperation(d.operation),
                                             AclPermissionType(d.permission_type)))
    except ValueError as e:
        raise AclFormatError(f"Invalid ACL: {e}") from None


def from_binding(b: AclBinding) -> AclEntryDescription:
    return AclEntryDescription(resource_type=b.pattern.resource_type, resource_name=b.pattern.name,
                               pattern_type=b.pattern.pattern_type, principal=b.entry.principal, host=b.entry.host,
                               operation=b.entry.operation, permission_type=b.entry.permission_type)


def _kafka_filter(m: Message) -> AclFilter:
    return AclFilter(resource_type_filter=m["resource_type_filter"], resource_name_filter=m["resource_name_filter"],
                     pattern_type_filter=m["pattern_type_filter"], principal_filter=m["principal_filter"],
                     host_filter=m["host_filter"], operation=m["operation"], permission_type=m["permission_type"])


def _kafka_entry(d: AclEntryDescription) -> Message:
    return {"principal": d.principal, "host": d.host, "operation": d.operation, "permission_type": d.permission_type}


# ------------------------------------------------------------------------------------------------ DescribeAcls


@message
class DescribeAclsRequest:
    """The bindings a filter matches."""

    filter: AclFilter


@message
class DescribeAclsResponse:
    """The matching bindings, or why none could be described."""

    error_code: Int16
    error_message: str | None = None
    acls: list[AclEntryDescription] = field(default_factory=list)


def _describe_response(body: DescribeAclsResponse, _version: int) -> Message:
    resources: dict[tuple[int, str, int], list[Message]] = {}
    for d in body.acls:
        resources.setdefault((d.resource_type, d.resource_name, d.pattern_type), []).append(_kafka_entry(d))
    return {"throttle_time_ms": 0, "error_code": body.error_code, "error_message": body.error_message,
            "resources": [{"resource_type": t, "resource_name": n, "pattern_type": p, "acls": acls}
                          for (t, n, p), acls in resources.items()]}


DESCRIBE_ACLS = Api(
    ApiKey.DESCRIBE_ACLS, "DescribeAcls", DescribeAclsRequest, DescribeAclsResponse, error_only(DescribeAclsResponse),
    kafka=spec_codec("DescribeAcls", lambda m, _version: DescribeAclsRequest(filter=_kafka_filter(m)),
                     _describe_response))


# ------------------------------------------------------------------------------------------------ CreateAcls


@message
class CreateAclsRequest:
    """Bindings to add."""

    creations: list[AclEntryDescription]


@message
class AclCreationResult:
    """The outcome for one binding."""

    error_code: Int16
    error_message: str | None = None


@message
class CreateAclsResponse:
    """An outcome for each binding, in order."""

    results: list[AclCreationResult]


def create_acls_error(request: CreateAclsRequest, code: ErrorCode, message: str | None) -> CreateAclsResponse:
    """The answer to a CreateAcls that failed as a whole: the error for every binding."""
    return CreateAclsResponse(results=[AclCreationResult(error_code=code, error_message=message)
                                       for _ in request.creations])


CREATE_ACLS = Api(
    ApiKey.CREATE_ACLS, "CreateAcls", CreateAclsRequest, CreateAclsResponse, create_acls_error,
    kafka=spec_codec("CreateAcls",
                     lambda m, _version: CreateAclsRequest(creations=[AclEntryDescription(
                         resource_type=c["resource_type"], resource_name=c["resource_name"],
                         pattern_type=c["resource_pattern_type"], principal=c["principal"], host=c["host"],
                         operation=c["operation"], permission_type=c["permission_type"]) for c in m["creations"]]),
                     lambda body, _version: {"throttle_time_ms": 0, "results": [
                         {"error_code": r.error_code, "error_message": r.error_message} for r in body.results]}))


# ------------------------------------------------------------------------------------------------ DeleteAcls


@message
class DeleteAclsRequest:
    """Delete the bindings each filter matches."""

    filters: list[AclFilter]


@message
class DeleteAclsFilterResult:
    """The bindings one filter deleted, or why it could not."""

    error_code: Int16
    error_message: str | None = None
    matching_acls: list[AclEntryDescription] = field(default_factory=list)


@message
class DeleteAclsResponse:
    """A result for each filter, in order."""

    filter_results: list[DeleteAclsFilterResult]


def delete_acls_error(request: DeleteAclsRequest, code: ErrorCode, message: str | None) -> DeleteAclsResponse:
    """The answer to a DeleteAcls that failed as a whole: the error for every filter."""
    return DeleteAclsResponse(filter_results=[DeleteAclsFilterResult(error_code=code, error_message=message)
                                              for _ in request.filters])


DELETE_ACLS = Api(
    ApiKey.DELETE_ACLS, "DeleteAcls", DeleteAclsRequest, DeleteAclsResponse, delete_acls_error,
    kafka=spec_codec("DeleteAcls",
                     lambda m, _version: DeleteAclsRequest(filters=[_kafka_filter(f) for f in m["filters"]]),
                     lambda body, _version: {"throttle_time_ms": 0, "filter_results": [
                         {"error_code": r.error_code, "error_message": r.error_message, "matching_acls": [
                             {"error_code": 0, "error_message": None, "resource_type": d.resource_type,
                              "resource_name": d.resource_name, "pattern_type": d.pattern_type, **_kafka_entry(d)}
                             for d in r.matching_acls]} for r in body.filter_results]}))
