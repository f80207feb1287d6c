"""DescribeAcls, CreateAcls and DeleteAcls: the authorizer's bindings, read from its cache and changed in ZooKeeper.
Without an authorizer (authorizer.class.name empty) each answers SECURITY_DISABLED, as Kafka does."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.acls import AclBinding, AclBindingFilter, AclFormatError, check_binding, check_filter
from protocol.apis.acls import (
    AclCreationResult,
    AclFilter,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsFilterResult,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    create_acls_error,
    delete_acls_error,
    from_binding,
    to_binding,
    to_filter,
)
from protocol.errors import ErrorCode
from zk.client import ZkError

log = logging.getLogger(__name__)

DISABLED = "No Authorizer is configured on the broker"


def _checked(message: AclFilter) -> AclBindingFilter:
    """The filter of a message; AclFormatError for an unknown code."""
    acl_filter = to_filter(message)
    check_filter(acl_filter)
    return acl_filter


class AclStore(Protocol):
    """Where bindings are read and changed."""

    def describe(self, acl_filter: AclBindingFilter) -> list[AclBinding]: ...

    async def create(self, bindings: Iterable[AclBinding]) -> None: ...

    async def delete(self, bindings: Iterable[AclBinding]) -> None: ...


class AclApis:
    """Answers the ACL apis from the authorizer, or SECURITY_DISABLED without one."""

    def __init__(self, store: AclStore | None) -> None:
        self._store = store

    async def handle_describe_acls(self, body: DescribeAclsRequest, _request: Request) -> Handled:
        if self._store is None:
            return Response(DescribeAclsResponse(error_code=ErrorCode.SECURITY_DISABLED, error_message=DISABLED))
        try:
            acl_filter = _checked(body.filter)
        except AclFormatError as e:
            return Response(DescribeAclsResponse(error_code=ErrorCode.INVALID_REQUEST, error_message=str(e)))
        return Response(DescribeAclsResponse(error_code=ErrorCode.NONE,
                                             acls=[from_binding(b) for b in self._store.describe(acl_filter)]))

    async def handle_create_acls(self, body: CreateAclsRequest, _request: Request) -> Handled:
        if self._store is None:
            return Response(create_acls_error(body, ErrorCode.SECURITY_DISABLED, DISABLED))
        results: list[AclCreationResult] = []
        valid: list[AclBinding] = []
        for creation in body.creations:
            try:
                binding = to_binding(creation)
                check_binding(binding)
            except AclFormatError as e:
                results.append(AclCreationResult(error_code=ErrorCode.INVALID_REQUEST, error_message=str(e)))
                continue
            valid.append(binding)
            results.append(AclCreationResult(error_code=ErrorCode.NONE))
        try:
            await self._store.create(valid)
        except (ZkError, RuntimeError) as e:
            log.warning("creating ACLs failed: %s", e)
            results = [r if r.error_code != ErrorCode.NONE else
                       AclCreationResult(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=str(e))
                       for r in results]
        return Response(CreateAclsResponse(results=results))

    async def handle_delete_acls(self, body: DeleteAclsRequest, _request: Request) -> Handled:
        if self._store is None:
            return Response(delete_acls_error(body, ErrorCode.SECURITY_DISABLED, DISABLED))
        results: list[DeleteAclsFilterResult] = []
        doomed: dict[AclBinding, None] = {}
        for message in body.filters:
            try:
                acl_filter = _checked(message)
            except AclFormatError as e:
                results.append(DeleteAclsFilterResult(error_code=ErrorCode.INVALID_REQUEST, error_message=str(e)))
                continue
            matched = self._store.describe(acl_filter)
            doomed.update(dict.fromkeys(matched))
            results.append(DeleteAclsFilterResult(error_code=ErrorCode.NONE,
                                                  matching_acls=[from_binding(b) for b in matched]))
        try:
            await self._store.delete(doomed)
        except (ZkError, RuntimeError) as e:
            log.warning("deleting ACLs failed: %s", e)
            return Response(delete_acls_error(body, ErrorCode.UNKNOWN_SERVER_ERROR, str(e)))
        return Response(DeleteAclsResponse(filter_results=results))
