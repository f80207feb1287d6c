"""AlterPartitionReassignments and ListPartitionReassignments, answered by the controller (NOT_CONTROLLER on other
brokers)."""

from __future__ import annotations

from typing import Protocol

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.apis.reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)


class PartitionReassigner(Protocol):
    """The controller's part in partition reassignments."""

    async def alter_partition_reassignments(self, request: AlterPartitionReassignmentsRequest
                                            ) -> AlterPartitionReassignmentsResponse: ...

    async def list_partition_reassignments(self, request: ListPartitionReassignmentsRequest
                                           ) -> ListPartitionReassignmentsResponse: ...


async def handle_alter_partition_reassignments(controller: PartitionReassigner,
                                               body: AlterPartitionReassignmentsRequest, _request: Request) -> Handled:
    return Response(await controller.alter_partition_reassignments(body))


async def handle_list_partition_reassignments(controller: PartitionReassigner,
                                              body: ListPartitionReassignmentsRequest, _request: Request) -> Handled:
    return Response(await controller.list_partition_reassignments(body))
