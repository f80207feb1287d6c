"""KafkaApis: each request handler registered by the type of request it takes, and the dispatch to it."""

from __future__ import annotations

from functools import partial
from typing import Protocol

from broker.apis import (
    api_versions,
    elections,
    fetch,
    group_admin,
    group_offsets,
    groups,
    offsets,
    produce,
    producer_ids,
    producers,
    reassignments,
    replica_control,
    replicas,
    sasl,
    topics,
)
from broker.apis.acls import AclApis, AclStore
from broker.apis.authorization import GUARDS, Authorizer, described_topic
from broker.apis.config_changes import ConfigChanges
from broker.apis.configs import BrokerConfigs, ConfigDescriber, TopicConfigSource
from broker.apis.elections import LeaderElector
from broker.apis.group_admin import GroupAdmin
from broker.apis.group_offsets import GroupOffsets
from broker.apis.groups import CoordinatorLocator, GroupMembership
from broker.apis.handler import Handled, Handler
from broker.apis.log_dirs import LogDirs, handle_describe_log_dirs
from broker.apis.metadata import MetadataHandler, TopicCreation
from broker.apis.producer_ids import ProducerIdSource
from broker.apis.reassignments import PartitionReassigner
from broker.apis.replica_control import BrokerEpoch, ShutdownController
from broker.apis.scram_credentials import UserScramCredentialStore
from broker.apis.topics import TopicController
from broker.metadata_cache import MetadataCache
from broker.network import Request, Response
from broker.replication.replica_manager import ReplicaManager
from protocol.apis.acls import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from protocol.apis.api_versions import ApiVersionsRequest
from protocol.apis.cluster import DescribeClusterRequest
from protocol.apis.config_changes import AlterConfigsRequest, IncrementalAlterConfigsRequest
from protocol.apis.configs import DescribeConfigsRequest
from protocol.apis.elections import ElectLeadersRequest
from protocol.apis.fetch import FetchRequest
from protocol.apis.group_admin import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from protocol.apis.group_offsets import OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest
from protocol.apis.groups import (
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from protocol.apis.log_dirs import DescribeLogDirsRequest
from protocol.apis.metadata import MetadataRequest
from protocol.apis.offsets import ListOffsetsRequest, OffsetsForLeaderEpochRequest
from protocol.apis.produce import ProduceRequest
from protocol.apis.producer_ids import InitProducerIdRequest
from protocol.apis.producers import DescribeProducersRequest
from protocol.apis.quotas import DescribeClientQuotasRequest
from protocol.apis.reassignments import AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest
from protocol.apis.records_deletion import DeleteRecordsRequest
from protocol.apis.replica_control import (
    ControlledShutdownRequest,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from protocol.apis.replicas import DescribeReplicasRequest
from protocol.apis.sasl import SaslAuthenticateRequest, SaslHandshakeRequest
from protocol.apis.scram_credentials import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest
from protocol.apis.topics import CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest
from protocol.errors import ErrorCode


class ControllerApi(TopicController, LeaderElector, PartitionReassigner, ShutdownController, Protocol):
    """The part of the controller the handlers use."""


class GroupCoordinatorApi(GroupMembership, GroupOffsets, GroupAdmin, Protocol):
    """The part of the group coordinator the handlers use."""


class AclAuthorizerApi(Authorizer, AclStore, Protocol):
    """The authorizer: it decides requests and keeps the bindings."""


class KafkaApis:
    """Dispatches each decoded request to the handler registered for its type; every handler answers, none raises.
    With an authorizer, each handler is wrapped in its request type's guard (broker/apis/authorization.py)."""

    def __init__(self, broker_id: int, broker_epoch: BrokerEpoch, replica_manager: ReplicaManager,
                 metadata_cache: MetadataCache, controller: ControllerApi, zk_state: TopicConfigSource,
                 producer_id_source: ProducerIdSource, group_coordinator: GroupCoordinatorApi,
                 coordinator_locator: CoordinatorLocator, topic_creation: TopicCreation, config_changes: ConfigChanges,
                 log_dirs: LogDirs, broker_configs: BrokerConfigs, scram_credentials: UserScramCredentialStore,
                 authorizer: AclAuthorizerApi | None = None) -> None:
        configs = ConfigDescriber(broker_id, replica_manager.config, metadata_cache, zk_state, broker_configs)
        metadata = MetadataHandler(metadata_cache, topic_creation)
        acls = AclApis(authorizer)
        self._handlers: dict[type, Handler] = {
            ApiVersionsRequest: api_versions.handle_api_versions,
            MetadataRequest: metadata.handle_metadata,
            DescribeClusterRequest: metadata.handle_describe_cluster,
            CreateTopicsRequest: partial(topics.handle_create_topics, broker_id, controller, configs.new_topic_configs),
            DescribeConfigsRequest: configs.handle_describe_configs,
            AlterConfigsRequest: config_changes.handle_alter_configs,
            IncrementalAlterConfigsRequest: config_changes.handle_incremental_alter_configs,
            InitProducerIdRequest: partial(producer_ids.handle_init_producer_id, producer_id_source),
            ProduceRequest: partial(produce.handle_produce, replica_manager),
            FetchRequest: partial(fetch.handle_fetch, replica_manager),
            ListOffsetsRequest: partial(offsets.handle_list_offsets, replica_manager),
            OffsetsForLeaderEpochRequest: partial(offsets.handle_offsets_for_leader_epoch, replica_manager),
            DeleteRecordsRequest: partial(offsets.handle_delete_records, replica_manager),
            DescribeProducersRequest: partial(producers.handle_describe_producers, replica_manager),
            DescribeLogDirsRequest: partial(handle_describe_log_dirs, log_dirs),
            LeaderAndIsrRequest: partial(replica_control.handle_leader_and_isr, replica_manager),
            UpdateMetadataRequest: partial(replica_control.handle_update_metadata, replica_manager, metadata_cache),
            StopReplicaRequest: partial(replica_control.handle_stop_replica, replica_manager),
            ControlledShutdownRequest: partial(replica_control.handle_controlled_shutdown, controller),
            DeleteTopicsRequest: partial(topics.handle_delete_topics, controller),
            CreatePartitionsRequest: partial(topics.handle_create_partitions, controller),
            ElectLeadersRequest: partial(elections.handle_elect_leaders, controller),
            AlterPartitionReassignmentsRequest: partial(reassignments.handle_alter_partition_reassignments, controller),
            ListPartitionReassignmentsRequest: partial(reassignments.handle_list_partition_reassignments, controller),
            DescribeReplicasRequest: partial(replicas.handle_describe_replicas, broker_id, replica_manager),
            FindCoordinatorRequest: partial(groups.handle_find_coordinator, coordinator_locator),
            JoinGroupRequest: partial(groups.handle_join_group, group_coordinator),
            SyncGroupRequest: partial(groups.handle_sync_group, group_coordinator),
            HeartbeatRequest: partial(groups.handle_heartbeat, group_coordinator),
            LeaveGroupRequest: partial(groups.handle_leave_group, group_coordinator),
            OffsetCommitRequest: partial(group_offsets.handle_offset_commit, group_coordinator, metadata_cache),
            OffsetFetchRequest: partial(group_offsets.handle_offset_fetch, group_coordinator),
            OffsetDeleteRequest: partial(group_offsets.handle_offset_delete, group_coordinator, metadata_cache),
            DescribeGroupsRequest: partial(group_admin.handle_describe_groups, group_coordinator),
            ListGroupsRequest: partial(group_admin.handle_list_groups, group_coordinator),
            DeleteGroupsRequest: partial(group_admin.handle_delete_groups, group_coordinator),
            DescribeAclsRequest: acls.handle_describe_acls,
            CreateAclsRequest: acls.handle_create_acls,
            DeleteAclsRequest: acls.handle_delete_acls,
            SaslHandshakeRequest: sasl.handle_sasl_handshake,
            DescribeClientQuotasRequest: sasl.handle_describe_client_quotas,
            SaslAuthenticateRequest: sasl.handle_sasl_authenticate,
            DescribeUserScramCredentialsRequest: scram_credentials.handle_describe,
            AlterUserScramCredentialsRequest: scram_credentials.handle_alter,
        }
        for request_type in (LeaderAndIsrRequest, UpdateMetadataRequest, StopReplicaRequest):
            self._handlers[request_type] = replica_control.fenced_by_broker_epoch(
                broker_epoch, self._handlers[request_type])
        if authorizer is not None:
            for request_type, guard in GUARDS.items():
                self._handlers[request_type] = guard(authorizer, self._handlers[request_type])
        self._handlers[FetchRequest] = fetch.by_topic_id(  # by name before the guard sees the topics
            metadata_cache, self._handlers[FetchRequest])
        self._handlers[DeleteTopicsRequest] = topics.by_topic_id(  # by name before the guard sees the topics
            lambda: metadata_cache.topic_names, described_topic(authorizer), self._handlers[DeleteTopicsRequest])

    @property
    def request_types(self) -> frozenset[type]:
        """The request types a handler is registered for."""
        return frozenset(self._handlers)

    async def handle(self, request: Request) -> Handled:
        """The answer of the handler registered for the request's type (each gets the request too: Metadata
        answers with the endpoints of the listener it came in on)."""
        handler = self._handlers.get(type(request.body))
        if handler is None:
            return Response(None, ErrorCode.INVALID_REQUEST, f"{type(request.body).__name__} is not served here")
        return await handler(request.body, request)
