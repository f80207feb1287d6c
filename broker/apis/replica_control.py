"""The controller's requests (LeaderAndIsr, StopReplica, UpdateMetadata), each refused if it was meant for an older
registration of this broker (STALE_BROKER_EPOCH: a request the network held back past a session expiry, KIP-380) or
if its controller epoch is older than the newest this broker has seen; and ControlledShutdown, answered by the
controller."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from broker.apis.handler import Handled, Handler
from broker.network import Request, Response
from protocol.apis.replica_control import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    PartitionError,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
    is_broker_epoch_stale,
)
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

#: This broker's epoch now: the czxid of its current registration in ZooKeeper (-1 before it has one).
BrokerEpoch = Callable[[], int]


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


ControllerRequest = LeaderAndIsrRequest | StopReplicaRequest | UpdateMetadataRequest


def _refused_whole(body: ControllerRequest, code: ErrorCode) -> object:
    """The answer refusing a controller request with `code`, for each partition it names too (Kafka's
    getErrorResponse), so that the controller sees none of them done."""
    if isinstance(body, LeaderAndIsrRequest):
        return LeaderAndIsrResponse(error_code=code, partition_errors=[
            PartitionError(topic=p.topic, partition=p.partition, error_code=code) for p in body.partition_states])
    if isinstance(body, StopReplicaRequest):
        return StopReplicaResponse(error_code=code, partition_errors=[
            PartitionError(topic=p.topic, partition=p.partition, error_code=code) for p in body.partitions])
    return UpdateMetadataResponse(error_code=code)


def fenced_by_broker_epoch(broker_epoch: BrokerEpoch, handler: Handler) -> Handler:
    """A controller request's handler that first refuses a request meant for an older registration of this broker
    with STALE_BROKER_EPOCH (Kafka's isBrokerEpochStale check in KafkaApis)."""
    async def handle(body: ControllerRequest, request: Request) -> Handled:
        current = broker_epoch()
        if is_broker_epoch_stale(body.broker_epoch, current):
            log.warning("ignoring %s from controller %d with broker epoch %d, older than this broker's %d",
                        type(body).__name__, body.controller_id, body.broker_epoch, current)
            return Response(_refused_whole(body, ErrorCode.STALE_BROKER_EPOCH))
        return await handler(body, request)
    return handle


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
