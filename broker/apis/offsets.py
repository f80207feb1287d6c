"""ListOffsets, OffsetsForLeaderEpoch and DeleteRecords, answered from the partitions' logs by the replica
manager."""

from __future__ import annotations

from typing import Protocol

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.apis.offsets import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from protocol.apis.records_deletion import DeleteRecordsRequest, DeleteRecordsResponse


class OffsetLookup(Protocol):
    """Where offsets are looked up."""

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse: ...

    def offsets_for_leader_epoch(self, request: OffsetsForLeaderEpochRequest) -> OffsetsForLeaderEpochResponse: ...

    def delete_records(self, request: DeleteRecordsRequest) -> DeleteRecordsResponse: ...


async def handle_list_offsets(lookup: OffsetLookup, body: ListOffsetsRequest, _request: Request) -> Handled:
    return Response(lookup.list_offsets(body))


async def handle_offsets_for_leader_epoch(lookup: OffsetLookup, body: OffsetsForLeaderEpochRequest,
                                          _request: Request) -> Handled:
    return Response(lookup.offsets_for_leader_epoch(body))


async def handle_delete_records(lookup: OffsetLookup, body: DeleteRecordsRequest, _request: Request) -> Handled:
    return Response(lookup.delete_records(body))
