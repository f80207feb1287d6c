"""The controller's requests (LeaderAndIsr, StopReplica, UpdateMetadata), each refused if its controller epoch is
older than the newest this broker has seen; and ControlledShutdown, answered by the controller."""

from __future__ import annotations

import logging
from typing import Protocol

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.apis.replica_control import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)


class ReplicaControl(Protocol):
    """The replicas the controller's requests start and stop, and the newest controller epoch seen (one per broker,
    shared by the three requests, as Kafka's controllerEpoch)."""

    controller_epoch: int

    async def become_leader_or_follower(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse: ...

    def stop_replicas(self, request: StopReplicaRequest) -> StopReplicaResponse: ...


class MetadataCacheUpdate(Protocol):
    """The metadata cache UpdateMetadata refreshes."""

    def update(self, request: UpdateMetadataRequest) -> None: ...


class ShutdownController(Protocol):
    """The controller's part in a broker's controlled shutdown."""

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ControlledShutdownResponse: ...


async def handle_leader_and_isr(replicas: ReplicaControl, body: LeaderAndIsrRequest, _request: Request) -> Handled:
    return Response(await replicas.become_leader_or_follower(body))


async def handle_stop_replica(replicas: ReplicaControl, body: StopReplicaRequest, _request: Request) -> Handled:
    return Response(replicas.stop_replicas(body))


async def handle_update_metadata(replicas: ReplicaControl, cache: MetadataCacheUpdate, body: UpdateMetadataRequest,
                                 _request: Request) -> Handled:
    if body.controller_epoch < replicas.controller_epoch:
        log.warning("ignoring UpdateMetadata from controller %d with stale epoch %d (current %d)",
                    body.controller_id, body.controller_epoch, replicas.controller_epoch)
        return Response(UpdateMetadataResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH))
    replicas.controller_epoch = body.controller_epoch
    cache.update(body)
    return Response(UpdateMetadataResponse(error_code=ErrorCode.NONE))


async def handle_controlled_shutdown(controller: ShutdownController, body: ControlledShutdownRequest,
                                     _request: Request) -> Handled:
    return Response(await controller.controlled_shutdown(body.broker_id, body.broker_epoch))
