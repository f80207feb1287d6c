"""Request handlers, one per RPC (Kafka's KafkaApis)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from broker.config_description import broker_config_entries, topic_config_entries
from broker.log.config import LogConfigError
from broker.metadata_cache import MetadataCache
from broker.network import CLOSE_CONNECTION, NO_RESPONSE, NoResponse, Request, Response
from broker.replication.replica_manager import ReplicaManager
from protocol.apis import supported_api_versions
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.apis.configs import (
    ConfigResourceType,
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
    DescribeConfigsResult,
)
from protocol.apis.elections import ElectLeadersRequest, ElectLeadersResponse
from protocol.apis.fetch import FetchRequest
from protocol.apis.metadata import MetadataRequest
from protocol.apis.offsets import ListOffsetsRequest, OffsetsForLeaderEpochRequest
from protocol.apis.produce import ProducePartitionResponse, ProduceRequest, ProduceResponse
from protocol.apis.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from protocol.apis.replica_control import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from protocol.apis.replicas import DescribedReplica, DescribeReplicasRequest, DescribeReplicasResponse, FollowerState
from protocol.apis.shapes import Topic
from protocol.apis.topics import (
    CreatableTopicResult,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

Handled = Response | asyncio.Future[Response] | NoResponse
VALID_ACKS = (-1, 0, 1)


class ControllerApi(Protocol):
    """The part of the controller the handlers use."""

    @property
    def is_active(self) -> bool: ...

    async def create_topics(self, request: CreateTopicsRequest) -> CreateTopicsResponse: ...

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ControlledShutdownResponse: ...

    async def delete_topics(self, request: DeleteTopicsRequest) -> DeleteTopicsResponse: ...

    async def create_partitions(self, request: CreatePartitionsRequest) -> CreatePartitionsResponse: ...

    async def elect_leaders(self, request: ElectLeadersRequest) -> ElectLeadersResponse: ...


class BrokerZkApi(Protocol):
    """The broker's own ZooKeeper work the handlers use."""

    async def topic_config(self, topic: str) -> dict[str, str]: ...


class ProducerIdSource(Protocol):
    """Where InitProducerId gets its ids."""

    async def generate_producer_id(self) -> int: ...


class KafkaApis:
    """Dispatches each decoded request to its handler; every handler answers, none raises."""

    def __init__(self, broker_id: int, replica_manager: ReplicaManager, metadata_cache: MetadataCache,
                 controller: ControllerApi, zk_state: BrokerZkApi, producer_ids: ProducerIdSource) -> None:
        self.broker_id = broker_id
        self.replica_manager = replica_manager
        self.metadata_cache = metadata_cache
        self.controller = controller
        self.zk_state = zk_state
        self.producer_ids = producer_ids
        self._handlers: dict[type, Callable[[Any], Awaitable[Handled]]] = {
            ApiVersionsRequest: self.handle_api_versions,
            CreateTopicsRequest: self.handle_create_topics,
            DescribeConfigsRequest: self.handle_describe_configs,
            InitProducerIdRequest: self.handle_init_producer_id,
            ProduceRequest: self.handle_produce,
            FetchRequest: self.handle_fetch,
            ListOffsetsRequest: self.handle_list_offsets,
            OffsetsForLeaderEpochRequest: self.handle_offsets_for_leader_epoch,
            LeaderAndIsrRequest: self.handle_leader_and_isr,
            UpdateMetadataRequest: self.handle_update_metadata,
            StopReplicaRequest: self.handle_stop_replica,
            ControlledShutdownRequest: self.handle_controlled_shutdown,
            DeleteTopicsRequest: self.handle_delete_topics,
            CreatePartitionsRequest: self.handle_create_partitions,
            ElectLeadersRequest: self.handle_elect_leaders,
            DescribeReplicasRequest: self.handle_describe_replicas,
        }

    async def handle(self, request: Request) -> Handled:
        if type(request.body) is MetadataRequest:  # the one answer that depends on the listener
            return self.handle_metadata(request.body, request.listener_name)
        handler = self._handlers.get(type(request.body))
        if handler is None:
            return Response(None, ErrorCode.INVALID_REQUEST, f"{type(request.body).__name__} is not served here")
        return await handler(request.body)

    async def handle_api_versions(self, _body: ApiVersionsRequest) -> Handled:
        return Response(ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=supported_api_versions()))

    def handle_metadata(self, body: MetadataRequest, listener_name: str) -> Handled:
        """Brokers are given with their endpoints on the listener the request came in on."""
        return Response(self.metadata_cache.metadata(body.topics, listener_name))

    async def handle_create_topics(self, body: CreateTopicsRequest) -> Handled:
        if not self.controller.is_active:
            return Response(CreateTopicsResponse(topics=[
                CreatableTopicResult(name=t.name, error_code=ErrorCode.NOT_CONTROLLER,
                                     error_message=f"broker {self.broker_id} is not the controller")
                for t in body.topics]))
        return Response(await self.controller.create_topics(body))

    async def handle_describe_configs(self, body: DescribeConfigsRequest) -> Handled:
        return Response(DescribeConfigsResponse(results=[await self._describe_configs(resource, body.include_synonyms)
                                                         for resource in body.resources]))

    async def _describe_configs(self, resource: DescribeConfigsResource,
                                include_synonyms: bool) -> DescribeConfigsResult:
        result = DescribeConfigsResult(error_code=ErrorCode.NONE, resource_type=resource.resource_type,
                                       resource_name=resource.resource_name, configs=[])
        config = self.replica_manager.config
        if resource.resource_type == ConfigResourceType.TOPIC:
            if resource.resource_name not in self.metadata_cache.topics():
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                result.error_message = f"topic {resource.resource_name} does not exist"
                return result
            try:
                overrides = await self.zk_state.topic_config(resource.resource_name)
                result.configs = topic_config_entries(config.log, overrides, resource.configuration_keys,
                                                      include_synonyms)
            except LogConfigError as e:
                result.error_code, result.error_message = ErrorCode.INVALID_CONFIG, str(e)
        elif resource.resource_type == ConfigResourceType.BROKER and resource.resource_name in ("",
                                                                                             str(self.broker_id)):
            result.configs = broker_config_entries(config.properties, resource.configuration_keys)
        else:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = (f"broker {self.broker_id} cannot describe resource type {resource.resource_type} "
                                    f"named {resource.resource_name!r}")
        return result

    async def handle_init_producer_id(self, body: InitProducerIdRequest) -> Handled:
        if body.transactional_id is not None:
            return Response(InitProducerIdResponse(error_code=ErrorCode.INVALID_REQUEST,
                                                   error_message="transactions are not supported"))
        producer_id = await self.producer_ids.generate_producer_id()
        return Response(InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0))

    async def handle_produce(self, body: ProduceRequest) -> Handled:
        if body.acks not in VALID_ACKS:
            return Response(ProduceResponse(topics=[Topic(name=t.name, partitions=[
                ProducePartitionResponse(partition=p.partition, error_code=ErrorCode.INVALID_REQUIRED_ACKS,
                                         error_message=f"acks must be -1, 0 or 1, got {body.acks}", base_offset=-1)
                for p in t.partitions]) for t in body.topics]))
        result = self.replica_manager.append_records(body)
        if body.acks == 0:
            if isinstance(result, asyncio.Future):  # it waited for a leader epoch to be written
                result = await result
            failed = any(p.error_code != ErrorCode.NONE for t in result.topics for p in t.partitions)
            return CLOSE_CONNECTION if failed else NO_RESPONSE
        return _respond(result)

    async def handle_fetch(self, body: FetchRequest) -> Handled:
        return _respond(self.replica_manager.fetch(body))

    async def handle_list_offsets(self, body: ListOffsetsRequest) -> Handled:
        return Response(self.replica_manager.list_offsets(body))

    async def handle_offsets_for_leader_epoch(self, body: OffsetsForLeaderEpochRequest) -> Handled:
        return Response(self.replica_manager.offsets_for_leader_epoch(body))

    async def handle_leader_and_isr(self, body: LeaderAndIsrRequest) -> Handled:
        return Response(await self.replica_manager.become_leader_or_follower(body))

    async def handle_update_metadata(self, body: UpdateMetadataRequest) -> Handled:
        # One controller epoch per broker, shared with LeaderAndIsr and StopReplica (Kafka's controllerEpoch).
        if body.controller_epoch < self.replica_manager.controller_epoch:
            log.warning("ignoring UpdateMetadata from controller %d with stale epoch %d (current %d)",
                        body.controller_id, body.controller_epoch, self.replica_manager.controller_epoch)
            return Response(UpdateMetadataResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH))
        self.replica_manager.controller_epoch = body.controller_epoch
        self.metadata_cache.update(body)
        return Response(UpdateMetadataResponse(error_code=ErrorCode.NONE))

    async def handle_stop_replica(self, body: StopReplicaRequest) -> Handled:
        return Response(self.replica_manager.stop_replicas(body))

    async def handle_controlled_shutdown(self, body: ControlledShutdownRequest) -> Handled:
        return Response(await self.controller.controlled_shutdown(body.broker_id, body.broker_epoch))

    async def handle_delete_topics(self, body: DeleteTopicsRequest) -> Handled:
        """Answered by the controller (TOPIC_DELETION_DISABLED without delete.topic.enable, else NOT_CONTROLLER
        on other brokers)."""
        return Response(await self.controller.delete_topics(body))

    async def handle_create_partitions(self, body: CreatePartitionsRequest) -> Handled:
        return Response(await self.controller.create_partitions(body))

    async def handle_elect_leaders(self, body: ElectLeadersRequest) -> Handled:
        return Response(await self.controller.elect_leaders(body))

    async def handle_describe_replicas(self, body: DescribeReplicasRequest) -> Handled:
        partitions = []
        for partition in self.replica_manager.describe(body.topics):
            partition_log = partition.log
            partitions.append(DescribedReplica(
                topic=partition.tp.topic, partition=partition.tp.partition, role=partition.role.value,
                leader=partition.leader_id, leader_epoch=partition.leader_epoch,
                log_end_offset=partition_log.log_end_offset, high_watermark=partition_log.high_watermark,
                log_start_offset=partition_log.log_start_offset, isr=sorted(partition.isr),
                followers=[FollowerState(broker_id=r.broker_id, log_end_offset=r.log_end_offset,
                                         last_caught_up_time_ms=r.last_caught_up_time_ms,
                                         last_fetch_time_ms=r.last_fetch_time_ms)
                           for r in partition.remote_replicas.values()],
                min_insync_replicas=partition.min_insync_replicas))
        return Response(DescribeReplicasResponse(broker_id=self.broker_id, partitions=partitions))


def _respond(result: object) -> Response | asyncio.Future[Response]:
    """Wrap a body, or a future body from a purgatory, as the network layer's Response."""
    if not isinstance(result, asyncio.Future):
        return Response(result)
    wrapped: asyncio.Future[Response] = asyncio.get_running_loop().create_future()

    def done(future: asyncio.Future) -> None:
        if not wrapped.done():
            wrapped.set_result(Response(future.result()))

    result.add_done_callback(done)
    return wrapped
