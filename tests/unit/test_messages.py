"""RPC declarations and the generic codec: round trips, validation paths, request/response envelopes."""

import contextlib
from dataclasses import dataclass
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.apis import API_BY_REQUEST_TYPE, APIS, supported_api_versions
from protocol.apis.acls import (
    AclCreationResult,
    AclEntryDescription,
    AclFilter,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsFilterResult,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from protocol.apis.api import ApiKey
from protocol.apis.api_versions import ApiVersionRange, ApiVersionsRequest, ApiVersionsResponse
from protocol.apis.cluster import ClusterBroker, DescribeClusterRequest, DescribeClusterResponse
from protocol.apis.config_changes import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
    AlterConfigsResponse,
    AlterConfigsResult,
    IncrementalAlterableConfig,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
    IncrementalAlterConfigsResponse,
)
from protocol.apis.configs import (
    ConfigEntry,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
    DescribeConfigsResult,
)
from protocol.apis.elections import (
    ElectionType,
    ElectLeadersRequest,
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
    TopicPartitions,
)
from protocol.apis.fetch import (
    CONSUMER_REPLICA_ID,
    DEBUGGING_CONSUMER_ID,
    EpochEndOffset,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    LeaderIdAndEpoch,
)
from protocol.apis.log_dirs import (
    DescribableLogDirTopic,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    LogDirPartition,
    LogDirResult,
    LogDirTopic,
)
from protocol.apis.metadata import MetadataBroker, MetadataPartition, MetadataRequest, MetadataResponse, MetadataTopic
from protocol.apis.offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderPartitionResult,
    OffsetForLeaderTopic,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from protocol.apis.produce import ProducePartition, ProducePartitionResponse, ProduceRequest, ProduceResponse
from protocol.apis.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from protocol.apis.producers import (
    DescribeProducersPartitionResult,
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeProducersTopic,
    DescribeProducersTopicResult,
    ProducerState,
)
from protocol.apis.quotas import DescribeClientQuotasRequest, DescribeClientQuotasResponse, QuotaFilterComponent
from protocol.apis.reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    ListPartitionReassignmentsTopics,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
    ReassignablePartition,
    ReassignablePartitionResponse,
    ReassignableTopic,
    ReassignableTopicResponse,
)
from protocol.apis.records_deletion import (
    HIGH_WATERMARK,
    DeleteRecordsPartition,
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopic,
    DeleteRecordsTopicResult,
)
from protocol.apis.replica_control import (
    LEADER_DURING_DELETE,
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LiveBroker,
    LiveLeader,
    PartitionError,
    StopReplicaPartition,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from protocol.apis.replicas import (
    DescribedReplica,
    DescribeReplicasRequest,
    DescribeReplicasResponse,
    EpochStart,
    FollowerState,
)
from protocol.apis.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from protocol.apis.scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
    CredentialInfo,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
    UserScramCredentials,
)
from protocol.apis.shapes import Topic
from protocol.apis.topics import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicResult,
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from protocol.codec import PASS_THROUGH_BYTES, ValidationError, decode_body, encode_body
from protocol.envelope import (
    InvalidRequestError,
    MalformedRequestError,
    MalformedResponseError,
    RequestHeader,
    RequestRejectedError,
    UnknownApiError,
    UnsupportedVersionError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_parts,
)
from protocol.errors import ErrorCode, ProtocolError
from protocol.topic_partition import TopicPartition
from tests.unit.test_kafka_group_apis import EXPECTED_REQUESTS, GROUP_APIS, RESPONSES_DECLARED

BATCH = bytes(range(256)) * 4

SAMPLES: dict[int, tuple[Any, Any]] = {
    ApiKey.PRODUCE: (
        ProduceRequest(
            acks=-1,
            timeout_ms=30_000,
            topics=[
                Topic(
                    name="orders",
                    partitions=[
                        ProducePartition(partition=0, records=BATCH),
                        ProducePartition(partition=1, records=b"", current_leader_epoch=3),
                    ],
                )
            ],
        ),
        ProduceResponse(
            topics=[
                Topic(
                    name="orders",
                    partitions=[
                        ProducePartitionResponse(
                            partition=0, error_code=0, base_offset=2**40, log_start_offset=0
                        ),
                        ProducePartitionResponse(
                            partition=1,
                            error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                            error_message="broker 2 leads orders-1",
                            base_offset=-1,
                        ),
                    ],
                )
            ],
            throttle_time_ms=5,
        ),
    ),
    ApiKey.FETCH: (
        FetchRequest(
            replica_id=2,
            replica_epoch=17,
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=52_428_800,
            topics=[
                Topic(
                    name="orders",
                    partitions=[
                        FetchPartition(
                            partition=0,
                            current_leader_epoch=4,
                            fetch_offset=100,
                            last_fetched_epoch=3,
                            log_start_offset=0,
                            partition_max_bytes=1_048_576,
                        )
                    ],
                )
            ],
        ),
        FetchResponse(
            error_code=0,
            topics=[
                Topic(
                    name="orders",
                    partitions=[
                        FetchPartitionResponse(
                            partition=0, error_code=0, high_watermark=120, log_start_offset=0, records=BATCH
                        ),
                        FetchPartitionResponse(
                            partition=1,
                            error_code=0,
                            high_watermark=7,
                            diverging_epoch=EpochEndOffset(epoch=3, end_offset=5),
                            current_leader=LeaderIdAndEpoch(leader_id=1, leader_epoch=4),
                            records=b"",
                        ),
                    ],
                )
            ],
        ),
    ),
    ApiKey.LIST_OFFSETS: (
        ListOffsetsRequest(
            replica_id=CONSUMER_REPLICA_ID,
            isolation_level=0,
            topics=[
                Topic(
                    name="orders",
                    partitions=[ListOffsetsPartition(partition=0, timestamp=EARLIEST_TIMESTAMP)],
                )
            ],
        ),
        ListOffsetsResponse(
            topics=[
                Topic(
                    name="orders",
                    partitions=[
                        ListOffsetsPartitionResponse(
                            partition=0, error_code=0, timestamp=-1, offset=42, leader_epoch=4
                        )
                    ],
                )
            ]
        ),
    ),
    ApiKey.METADATA: (
        MetadataRequest(topics=["orders", "audit"], allow_auto_topic_creation=True),
        MetadataResponse(
            brokers=[MetadataBroker(node_id=1, host="127.0.0.1", port=9092)],
            controller_id=1,
            topics=[
                MetadataTopic(
                    error_code=0,
                    name="orders",
                    partitions=[
                        MetadataPartition(
                            error_code=0,
                            partition=0,
                            leader=1,
                            leader_epoch=4,
                            replicas=[1, 2, 3],
                            isr=[1, 2],
                            offline_replicas=[3],
                        )
                    ],
                ),
                MetadataTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name="audit", partitions=[]),
            ],
        ),
    ),
    ApiKey.LEADER_AND_ISR: (
        LeaderAndIsrRequest(
            controller_id=1,
            controller_epoch=3,
            broker_epoch=2**33,
            partition_states=[
                LeaderAndIsrPartitionState(
                    topic="orders",
                    partition=0,
                    controller_epoch=3,
                    leader=1,
                    leader_epoch=4,
                    isr=[1, 2],
                    zk_version=9,
                    replicas=[1, 2, 3],
                    is_new=True,
                    topic_id="ZOLr9CLNQjSW70hyIHx6BQ",
                )
            ],
            live_leaders=[LiveLeader(broker_id=1, host="127.0.0.1", port=9092)],
        ),
        LeaderAndIsrResponse(
            error_code=0,
            partition_errors=[
                PartitionError(topic="orders", partition=0, error_code=ErrorCode.FENCED_LEADER_EPOCH)
            ],
        ),
    ),
    ApiKey.STOP_REPLICA: (
        StopReplicaRequest(
            controller_id=1,
            controller_epoch=3,
            broker_epoch=5,
            partitions=[StopReplicaPartition(topic="orders", partition=2, delete_partition=True,
                                             topic_id="ZOLr9CLNQjSW70hyIHx6BQ")],
        ),
        StopReplicaResponse(
            error_code=0, partition_errors=[PartitionError(topic="orders", partition=2, error_code=0)]
        ),
    ),
    ApiKey.UPDATE_METADATA: (
        UpdateMetadataRequest(
            controller_id=1,
            controller_epoch=3,
            broker_epoch=5,
            partition_states=[
                UpdateMetadataPartitionState(
                    topic="orders",
                    partition=0,
                    controller_epoch=3,
                    leader=-1,
                    leader_epoch=5,
                    isr=[3],
                    zk_version=10,
                    replicas=[1, 2, 3],
                    offline_replicas=[3],
                )
            ],
            live_brokers=[LiveBroker(id=1, endpoints=[
                UpdateMetadataEndpoint(listener="INTERNAL", host="broker-1", port=29092),
                UpdateMetadataEndpoint(listener="EXTERNAL", host="localhost", port=9093),
            ])],
        ),
        UpdateMetadataResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH),
    ),
    ApiKey.CONTROLLED_SHUTDOWN: (
        ControlledShutdownRequest(broker_id=2, broker_epoch=77),
        ControlledShutdownResponse(
            error_code=0, remaining_partitions=[TopicPartition(topic="orders", partition=1)]
        ),
    ),
    ApiKey.API_VERSIONS: (
        ApiVersionsRequest(),
        ApiVersionsResponse(error_code=0, api_keys=supported_api_versions()),
    ),
    ApiKey.CREATE_TOPICS: (
        CreateTopicsRequest(
            topics=[
                CreatableTopic(
                    name="orders",
                    num_partitions=3,
                    replication_factor=3,
                    configs={"min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
                ),
                CreatableTopic(
                    name="pinned",
                    num_partitions=-1,
                    replication_factor=-1,
                    assignments=[CreatableReplicaAssignment(partition=0, broker_ids=[2, 1])],
                ),
            ],
            timeout_ms=10_000,
            validate_only=True,
        ),
        CreateTopicsResponse(
            topics=[
                CreatableTopicResult(name="orders", error_code=0, num_partitions=3, replication_factor=3),
                CreatableTopicResult(
                    name="pinned",
                    error_code=ErrorCode.INVALID_REPLICATION_FACTOR,
                    error_message="replication factor 4 larger than 3 live brokers",
                ),
            ]
        ),
    ),
    ApiKey.DELETE_TOPICS: (
        DeleteTopicsRequest(topic_names=["orders", "gone"], timeout_ms=5_000),
        DeleteTopicsResponse(responses=[
            DeletableTopicResult(name="orders", error_code=0),
            DeletableTopicResult(name="gone", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message="no"),
        ]),
    ),
    ApiKey.INIT_PRODUCER_ID: (
        InitProducerIdRequest(),
        InitProducerIdResponse(error_code=0, producer_id=1000, producer_epoch=0),
    ),
    ApiKey.DESCRIBE_CONFIGS: (
        DescribeConfigsRequest(resources=[
            DescribeConfigsResource(resource_type=ConfigResourceType.TOPIC, resource_name="orders"),
            DescribeConfigsResource(resource_type=ConfigResourceType.BROKER, resource_name="1",
                                    configuration_keys=["broker.id"]),
        ], include_synonyms=True),
        DescribeConfigsResponse(results=[
            DescribeConfigsResult(error_code=0, resource_type=ConfigResourceType.TOPIC, resource_name="orders",
                                  configs=[ConfigEntry(name="retention.ms", value="1000",
                                                       config_source=ConfigSource.DYNAMIC_TOPIC_CONFIG,
                                                       config_type=ConfigType.LONG,
                                                       synonyms=[ConfigSynonym(name="retention.ms", value="1000",
                                                                               source=1)])]),
            DescribeConfigsResult(error_code=0, resource_type=ConfigResourceType.BROKER, resource_name="1",
                                  configs=[ConfigEntry(name="broker.id", value="1", read_only=True,
                                                       config_source=ConfigSource.STATIC_BROKER_CONFIG)]),
        ]),
    ),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (
        OffsetsForLeaderEpochRequest(
            replica_id=2,
            topics=[
                OffsetForLeaderTopic(
                    topic="orders",
                    partitions=[
                        OffsetForLeaderPartition(partition=0, current_leader_epoch=5, leader_epoch=3)
                    ],
                )
            ],
        ),
        OffsetsForLeaderEpochResponse(
            topics=[
                OffsetForLeaderTopic(
                    topic="orders",
                    partitions=[
                        OffsetForLeaderPartitionResult(
                            error_code=0, partition=0, leader_epoch=3, end_offset=57
                        )
                    ],
                )
            ]
        ),
    ),
    ApiKey.DELETE_TOPICS: (
        DeleteTopicsRequest(topic_names=["orders", "gone"], timeout_ms=30_000),
        DeleteTopicsResponse(responses=[
            DeletableTopicResult(name="orders", error_code=0),
            DeletableTopicResult(name="gone", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 error_message="Topic 'gone' does not exist."),
        ]),
    ),
    ApiKey.CREATE_PARTITIONS: (
        CreatePartitionsRequest(
            topics=[
                CreatePartitionsTopic(name="orders", count=6),
                CreatePartitionsTopic(name="pinned", count=2,
                                      assignments=[CreatePartitionsAssignment(broker_ids=[3, 1])]),
            ],
            timeout_ms=10_000,
            validate_only=True,
        ),
        CreatePartitionsResponse(results=[
            CreatePartitionsTopicResult(name="orders", error_code=0),
            CreatePartitionsTopicResult(name="pinned", error_code=ErrorCode.INVALID_PARTITIONS,
                                        error_message="Topic currently has 3 partitions, which is higher than the "
                                                      "requested 2."),
        ]),
    ),
    ApiKey.ELECT_LEADERS: (
        ElectLeadersRequest(election_type=ElectionType.PREFERRED,
                            topic_partitions=[TopicPartitions(topic="orders", partitions=[0, 2])], timeout_ms=5000),
        ElectLeadersResponse(error_code=0, replica_election_results=[ReplicaElectionResult(
            topic="orders", partition_result=[
                PartitionResult(partition_id=0, error_code=0),
                PartitionResult(partition_id=2, error_code=ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                                error_message="preferred replica 3 is not live"),
            ])]),
    ),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (
        AlterPartitionReassignmentsRequest(timeout_ms=60000, topics=[ReassignableTopic(name="orders", partitions=[
            ReassignablePartition(partition_index=0, replicas=[2, 3]),
            ReassignablePartition(partition_index=1, replicas=None)])]),
        AlterPartitionReassignmentsResponse(error_code=0, error_message=None, responses=[ReassignableTopicResponse(
            name="orders", partitions=[
                ReassignablePartitionResponse(partition_index=0, error_code=0),
                ReassignablePartitionResponse(partition_index=1, error_code=ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                                              error_message="No reassignment of orders-1 is in progress.")])]),
    ),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (
        ListPartitionReassignmentsRequest(timeout_ms=60000, topics=[ListPartitionReassignmentsTopics(
            name="orders", partition_indexes=[0, 1])]),
        ListPartitionReassignmentsResponse(error_code=0, error_message=None, topics=[OngoingTopicReassignment(
            name="orders", partitions=[OngoingPartitionReassignment(partition_index=0, replicas=[2, 3, 1],
                                                                    adding_replicas=[3], removing_replicas=[1])])]),
    ),
    ApiKey.DELETE_RECORDS: (
        DeleteRecordsRequest(topics=[DeleteRecordsTopic(name="orders", partitions=[
            DeleteRecordsPartition(partition_index=0, offset=HIGH_WATERMARK)])], timeout_ms=30000),
        DeleteRecordsResponse(topics=[DeleteRecordsTopicResult(name="orders", partitions=[
            DeleteRecordsPartitionResult(partition_index=0, low_watermark=120, error_code=0)])]),
    ),
    ApiKey.ALTER_CONFIGS: (
        AlterConfigsRequest(resources=[AlterConfigsResource(resource_type=2, resource_name="orders", configs=[
            AlterableConfig(name="retention.ms", value="60000")])]),
        AlterConfigsResponse(responses=[AlterConfigsResult(error_code=0, resource_type=2, resource_name="orders")]),
    ),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (
        IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsResource(
            resource_type=2, resource_name="orders", configs=[
                IncrementalAlterableConfig(name="retention.ms", config_operation=1, value=None)])], validate_only=True),
        IncrementalAlterConfigsResponse(responses=[AlterConfigsResult(
            error_code=40, error_message="Invalid config", resource_type=2, resource_name="orders")]),
    ),
    ApiKey.DESCRIBE_LOG_DIRS: (
        DescribeLogDirsRequest(topics=[DescribableLogDirTopic(topic="orders", partitions=[0])]),
        DescribeLogDirsResponse(error_code=0, results=[LogDirResult(
            error_code=0, log_dir="/data/broker-1", total_bytes=10**12, usable_bytes=10**11, topics=[LogDirTopic(
                name="orders", partitions=[LogDirPartition(partition_index=0, partition_size=4096, offset_lag=0)])])]),
    ),
    ApiKey.DESCRIBE_ACLS: (
        DescribeAclsRequest(filter=AclFilter(resource_type_filter=2, resource_name_filter="orders",
                                             pattern_type_filter=2, operation=1, permission_type=1)),
        DescribeAclsResponse(error_code=0, acls=[AclEntryDescription(
            resource_type=2, resource_name="or", pattern_type=4, principal="User:alice", host="*", operation=3,
            permission_type=3)]),
    ),
    ApiKey.CREATE_ACLS: (
        CreateAclsRequest(creations=[AclEntryDescription(
            resource_type=3, resource_name="app", principal="User:alice", host="*", operation=3, permission_type=3)]),
        CreateAclsResponse(results=[AclCreationResult(error_code=0)]),
    ),
    ApiKey.DELETE_ACLS: (
        DeleteAclsRequest(filters=[AclFilter(resource_type_filter=1, principal_filter="User:bob", operation=1,
                                             permission_type=2)]),
        DeleteAclsResponse(filter_results=[DeleteAclsFilterResult(error_code=0, matching_acls=[AclEntryDescription(
            resource_type=2, resource_name="*", principal="User:bob", host="*", operation=4, permission_type=2)])]),
    ),
    ApiKey.DESCRIBE_CLUSTER: (
        DescribeClusterRequest(),
        DescribeClusterResponse(error_code=0, cluster_id="Wz3hJwq9T0y1e6bRfZbBLQ", controller_id=2, brokers=[
            ClusterBroker(broker_id=1, host="127.0.0.1", port=9092),
            ClusterBroker(broker_id=2, host="127.0.0.2", port=9092)]),
    ),
    ApiKey.DESCRIBE_PRODUCERS: (
        DescribeProducersRequest(topics=[DescribeProducersTopic(name="orders", partition_indexes=[0, 1])]),
        DescribeProducersResponse(topics=[DescribeProducersTopicResult(name="orders", partitions=[
            DescribeProducersPartitionResult(partition_index=0, error_code=0, active_producers=[
                ProducerState(producer_id=1000, producer_epoch=0, last_sequence=41, last_timestamp=1_700_000_000_000)]),
            DescribeProducersPartitionResult(partition_index=1, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                             error_message="not here")])]),
    ),
    ApiKey.DESCRIBE_REPLICAS: (
        DescribeReplicasRequest(topics=None),
        DescribeReplicasResponse(
            broker_id=1,
            partitions=[
                DescribedReplica(
                    topic="orders",
                    partition=0,
                    role="leader",
                    leader=1,
                    leader_epoch=4,
                    log_end_offset=120,
                    high_watermark=118,
                    log_start_offset=0,
                    isr=[1, 2],
                    followers=[
                        FollowerState(
                            broker_id=2,
                            log_end_offset=118,
                            last_caught_up_time_ms=1_700_000_000_000,
                            last_fetch_time_ms=1_700_000_000_100,
                        )
                    ],
                    min_insync_replicas=2,
                )
            ],
        ),
    ),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (
        DescribeClientQuotasRequest(components=[QuotaFilterComponent(entity_type="user", match_type=0, match="alice")]),
        DescribeClientQuotasResponse(error_code=0),
    ),
    ApiKey.SASL_HANDSHAKE: (
        SaslHandshakeRequest(mechanism="SCRAM-SHA-512"),
        SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]),
    ),
    ApiKey.SASL_AUTHENTICATE: (
        SaslAuthenticateRequest(auth_bytes=b"n,,n=alice,r=abc"),
        SaslAuthenticateResponse(error_code=0, auth_bytes=b"r=abcdef,s=c2FsdA==,i=4096"),
    ),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (
        DescribeUserScramCredentialsRequest(users=["alice"]),
        DescribeUserScramCredentialsResponse(error_code=0, results=[
            UserScramCredentials(user="alice", credential_infos=[CredentialInfo(mechanism=2, iterations=8192)])]),
    ),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (
        AlterUserScramCredentialsRequest(
            deletions=[ScramCredentialDeletion(name="bob", mechanism=1)],
            upsertions=[ScramCredentialUpsertion(name="alice", mechanism=2, iterations=8192, salt=b"salt",
                                                 salted_password=b"x" * 64)]),
        AlterUserScramCredentialsResponse(results=[AlterUserScramCredentialsResult(user="alice", error_code=0)]),
    ),
}


#: The group apis' samples: those of their Kafka-wire tests, at the newest version each speaks.
SAMPLES.update({api.api_key: (EXPECTED_REQUESTS[name](api.kafka.versions.high),
                              RESPONSES_DECLARED[name](api.kafka.versions.high))
                for name, api in GROUP_APIS.items() if api.kafka is not None})


def header(api_key: int, correlation_id: int = 42) -> RequestHeader:
    return RequestHeader(api_key=api_key, api_version=0, correlation_id=correlation_id, client_id="test")


def raw_request(body: Any, api_key: int = ApiKey.PRODUCE, **overrides: Any) -> bytes:
    envelope = {"api_key": api_key, "api_version": 0, "correlation_id": 9, "client_id": None, "body": body}
    envelope.update(overrides)
    return msgpack.packb(envelope)


# --- the api table --------------------------------------------------------------------------


def test_every_api_has_a_sample() -> None:
    assert set(SAMPLES) == set(APIS)


def test_api_table() -> None:
    assert {key: api.name for key, api in APIS.items()} == {
        0: "Produce",
        1: "Fetch",
        2: "ListOffsets",
        3: "Metadata",
        4: "LeaderAndIsr",
        5: "StopReplica",
        6: "UpdateMetadata",
        7: "ControlledShutdown",
        8: "OffsetCommit",
        9: "OffsetFetch",
        10: "FindCoordinator",
        11: "JoinGroup",
        12: "Heartbeat",
        13: "LeaveGroup",
        14: "SyncGroup",
        15: "DescribeGroups",
        16: "ListGroups",
        18: "ApiVersions",
        19: "CreateTopics",
        20: "DeleteTopics",
        22: "InitProducerId",
        23: "OffsetsForLeaderEpoch",
        29: "DescribeAcls",
        30: "CreateAcls",
        31: "DeleteAcls",
        32: "DescribeConfigs",
        37: "CreatePartitions",
        42: "DeleteGroups",
        43: "ElectLeaders",
        45: "AlterPartitionReassignments",
        46: "ListPartitionReassignments",
        47: "OffsetDelete",
        21: "DeleteRecords",
        33: "AlterConfigs",
        44: "IncrementalAlterConfigs",
        35: "DescribeLogDirs",
        60: "DescribeCluster",
        61: "DescribeProducers",
        17: "SaslHandshake",
        36: "SaslAuthenticate",
        50: "DescribeUserScramCredentials",
        51: "AlterUserScramCredentials",
        48: "DescribeClientQuotas",
        1000: "DescribeReplicas",
    }
    for key, api in APIS.items():
        assert api.api_key == key
        assert (api.min_version, api.max_version) == (0, 0)
        assert API_BY_REQUEST_TYPE[api.request] is api


def test_sentinels_have_kafkas_values() -> None:
    assert (CONSUMER_REPLICA_ID, LATEST_TIMESTAMP, EARLIEST_TIMESTAMP) == (-1, -1, -2)
    assert (DEBUGGING_CONSUMER_ID, LEADER_DURING_DELETE) == (-2, -2)
    assert (ElectionType.PREFERRED, ElectionType.UNCLEAN) == (0, 1)


def test_supported_api_versions_derive_from_the_table() -> None:
    assert supported_api_versions() == [
        ApiVersionRange(api_key=key, min_version=0, max_version=0) for key in APIS
    ]


# --- round trips ----------------------------------------------------------------------------


@pytest.mark.parametrize("api_key", list(SAMPLES), ids=lambda k: APIS[k].name)
def test_request_round_trip(api_key: int) -> None:
    request = SAMPLES[api_key][0]
    decoded_header, body = decode_request(encode_request(header(api_key), request))
    assert decoded_header == header(api_key)
    assert type(body) is type(request)
    assert body == request


@pytest.mark.parametrize("api_key", list(SAMPLES), ids=lambda k: APIS[k].name)
def test_response_round_trip(api_key: int) -> None:
    response = SAMPLES[api_key][1]
    correlation_id, error, message, body = decode_response(encode_response(42, response), api_key)
    assert (correlation_id, error, message) == (42, ErrorCode.NONE, None)
    assert type(body) is type(response)
    assert body == response


def test_request_level_error_response_has_no_body() -> None:
    payload = encode_response(7, None, ErrorCode.UNSUPPORTED_VERSION, "Fetch version 3 is not supported")
    assert decode_response(payload, ApiKey.FETCH) == (
        7,
        ErrorCode.UNSUPPORTED_VERSION,
        "Fetch version 3 is not supported",
        None,
    )
    with pytest.raises(ValueError, match="must carry an error code"):
        encode_response(7, None)


def test_response_with_an_unknown_error_code_decodes_as_unknown_server_error() -> None:
    payload = msgpack.packb({"correlation_id": 1, "error_code": 999, "error_message": None, "body": None})
    assert decode_response(payload, ApiKey.METADATA)[1] is ErrorCode.UNKNOWN_SERVER_ERROR


def test_encode_response_refuses_a_non_response_body() -> None:
    with pytest.raises(TypeError, match="ProduceRequest is not a response message"):
        encode_response(1, SAMPLES[ApiKey.PRODUCE][0])


def test_wire_form_is_a_plain_map_with_field_names() -> None:
    request = SAMPLES[ApiKey.CONTROLLED_SHUTDOWN][0]
    assert msgpack.unpackb(encode_request(header(ApiKey.CONTROLLED_SHUTDOWN, 5), request)) == {
        "api_key": 7,
        "api_version": 0,
        "correlation_id": 5,
        "client_id": "test",
        "body": {"broker_id": 2, "broker_epoch": 77},
    }
    assert msgpack.unpackb(encode_response(5, SAMPLES[ApiKey.CONTROLLED_SHUTDOWN][1])) == {
        "correlation_id": 5,
        "error_code": 0,
        "error_message": None,
        "body": {"error_code": 0, "remaining_partitions": [{"topic": "orders", "partition": 1}]},
    }


def test_records_travel_as_bin_and_are_not_copied_by_the_codec() -> None:
    response = SAMPLES[ApiKey.FETCH][1]
    encoded = encode_body(response)
    assert encoded["topics"][0]["partitions"][0]["records"] is BATCH
    view = memoryview(bytearray(BATCH))[16:]  # e.g. a slice of a segment read into a buffer
    request = ProduceRequest(
        acks=1,
        timeout_ms=100,
        topics=[Topic(name="t", partitions=[ProducePartition(partition=0, records=view)])],
    )
    _, body = decode_request(encode_request(header(ApiKey.PRODUCE), request))
    assert body.topics[0].partitions[0].records == BATCH[16:]
    assert type(body.topics[0].partitions[0].records) is bytes


def test_missing_fields_with_defaults_take_them() -> None:
    body = {
        "topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1}],
        "timeout_ms": 1000,
    }
    request = decode_body(CreateTopicsRequest, body)
    assert request.validate_only is False
    assert request.topics[0].assignments == []
    assert request.topics[0].configs == {}
    fetch = decode_body(
        FetchPartitionResponse, {"partition": 0, "error_code": 0, "high_watermark": 3, "records": b""}
    )
    assert (fetch.last_stable_offset, fetch.log_start_offset) == (-1, -1)
    assert fetch.diverging_epoch is None and fetch.current_leader is None
    assert decode_body(MetadataRequest, {}) == MetadataRequest(topics=None, allow_auto_topic_creation=False)
    assert decode_body(OffsetsForLeaderEpochRequest, {"topics": []}).replica_id == -2


def test_describe_replicas_carries_epoch_starts_and_reads_answers_without_them() -> None:
    replica = DescribedReplica(topic="t", partition=0, role="follower", leader=2, leader_epoch=3, log_end_offset=9,
                               high_watermark=7, log_start_offset=0, isr=[1, 2], followers=[],
                               leader_epochs=[EpochStart(epoch=0, start_offset=0), EpochStart(epoch=3, start_offset=5)])
    response = DescribeReplicasResponse(broker_id=1, partitions=[replica], controller_epoch=4)
    assert decode_body(DescribeReplicasResponse, encode_body(response)) == response
    older = encode_body(response)
    del older["controller_epoch"]
    del older["partitions"][0]["leader_epochs"]
    decoded = decode_body(DescribeReplicasResponse, older)
    assert decoded.controller_epoch == -1
    assert decoded.partitions[0].leader_epochs == []


def test_unknown_keys_are_ignored() -> None:
    decoded = decode_body(TopicPartition, {"topic": "t", "partition": 1, "added_in_a_later_version": [1]})
    assert decoded == TopicPartition(topic="t", partition=1)


def test_int_range_limits_are_accepted() -> None:
    request = ProduceRequest(acks=-(2**15), timeout_ms=2**31 - 1, topics=[])
    assert decode_body(ProduceRequest, encode_body(request)) == request
    state = FollowerState(
        broker_id=-(2**31), log_end_offset=2**63 - 1, last_caught_up_time_ms=-(2**63), last_fetch_time_ms=0
    )
    assert decode_body(FollowerState, encode_body(state)) == state


# --- validation -----------------------------------------------------------------------------


def produce_body(**partition: Any) -> dict[str, Any]:
    partitions = [{"partition": 0, "records": b""}, {"partition": 1, "records": b""}]
    partitions.append({"partition": 2, "records": b"", **partition})
    return {"acks": 1, "timeout_ms": 100, "topics": [{"name": "t", "partitions": partitions}]}


@pytest.mark.parametrize(
    ("cls", "data", "message"),
    [
        (
            ProduceRequest,
            produce_body(partition="2"),
            "Produce request: topics[0].partitions[2].partition: expected int32, got str",
        ),
        (
            ProduceRequest,
            produce_body(partition=2**31),
            "Produce request: topics[0].partitions[2].partition: "
            "expected int32 in [-2147483648, 2147483647], got 2147483648",
        ),
        (
            ProduceRequest,
            {**produce_body(), "acks": 40_000},
            "Produce request: acks: expected int16 in [-32768, 32767], got 40000",
        ),
        (
            ProduceRequest,
            produce_body(partition=True),
            "Produce request: topics[0].partitions[2].partition: expected int32, got bool",
        ),
        (
            ProduceRequest,
            produce_body(records="abc"),
            "Produce request: topics[0].partitions[2].records: expected bytes, got str",
        ),
        (
            ProduceRequest,
            produce_body(records=None),
            "Produce request: topics[0].partitions[2].records: expected bytes, got null",
        ),
        (
            ProduceRequest,
            produce_body(current_leader_epoch=1.5),
            "Produce request: topics[0].partitions[2].current_leader_epoch: expected int32, got float",
        ),
        (
            ProduceRequest,
            {"acks": 1, "timeout_ms": 100, "topics": [{"name": b"t", "partitions": []}]},
            "Produce request: topics[0].name: expected str, got bytes",
        ),
        (
            ProduceRequest,
            {"acks": 1, "timeout_ms": 100, "topics": [{"partitions": []}]},
            "Produce request: topics[0].name: missing required field",
        ),
        (
            ProduceRequest,
            {"acks": 1, "timeout_ms": 100, "topics": {"t": []}},
            "Produce request: topics: expected list, got map",
        ),
        (ProduceRequest, [1, 2], "Produce request: expected map, got list"),
        (
            FetchRequest,
            {
                "replica_id": -1,
                "max_wait_ms": 0,
                "min_bytes": 1,
                "max_bytes": 1,
                "isolation_level": 128,
                "topics": [],
            },
            "Fetch request: isolation_level: expected int8 in [-128, 127], got 128",
        ),
        (
            MetadataRequest,
            {"topics": ["a", 1]},
            "Metadata request: topics[1]: expected str, got int",
        ),
        (
            MetadataRequest,
            {"allow_auto_topic_creation": 1},
            "Metadata request: allow_auto_topic_creation: expected bool, got int",
        ),
        (
            CreateTopicsRequest,
            {
                "timeout_ms": 1,
                "topics": [
                    {
                        "name": "t",
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "configs": {"retention.ms": 1000},
                    }
                ],
            },
            "CreateTopics request: topics[0].configs['retention.ms']: expected str, got int",
        ),
        (
            LeaderAndIsrRequest,
            {
                "controller_id": 1,
                "controller_epoch": 1,
                "broker_epoch": 1,
                "live_leaders": [],
                "partition_states": [
                    {
                        "topic": "t",
                        "partition": 0,
                        "controller_epoch": 1,
                        "leader": 1,
                        "leader_epoch": 0,
                        "isr": [1, "2"],
                        "zk_version": 0,
                        "replicas": [1],
                    }
                ],
            },
            "LeaderAndIsr request: partition_states[0].isr[1]: expected int32, got str",
        ),
        (
            FetchResponse,
            {
                "error_code": 0,
                "topics": [
                    {
                        "name": "t",
                        "partitions": [
                            {
                                "partition": 0,
                                "error_code": 0,
                                "high_watermark": 0,
                                "records": b"",
                                "diverging_epoch": {"epoch": "3", "end_offset": 5},
                            }
                        ],
                    }
                ],
            },
            "Fetch response: topics[0].partitions[0].diverging_epoch.epoch: expected int32, got str",
        ),
        (
            TopicPartition,
            {"topic": "t"},
            "TopicPartition: partition: missing required field",
        ),
    ],
)
def test_validation_error_names_the_path(cls: type, data: Any, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        decode_body(cls, data)
    assert str(info.value) == message


def test_encoding_validates_too() -> None:
    request = ProduceRequest(
        acks=1,
        timeout_ms=100,
        topics=[Topic(name="t", partitions=[ProducePartition(partition=0, records="text")])],
    )
    with pytest.raises(ValidationError) as info:
        encode_request(header(ApiKey.PRODUCE), request)
    assert str(info.value) == "Produce request: topics[0].partitions[0].records: expected bytes, got str"
    assert info.value.path == "topics[0].partitions[0].records"
    assert info.value.problem == "expected bytes, got str"


def test_encoding_refuses_a_body_of_another_api() -> None:
    with pytest.raises(ValidationError, match="Produce request: expected ProduceRequest, got FetchRequest"):
        encode_request(header(ApiKey.PRODUCE), SAMPLES[ApiKey.FETCH][0])


def test_encoding_refuses_a_nested_message_of_the_wrong_type() -> None:
    response = ControlledShutdownResponse(
        error_code=0, remaining_partitions=[PartitionError(topic="t", partition=0, error_code=0)]
    )
    with pytest.raises(ValidationError) as info:
        encode_body(response)
    assert str(info.value) == (
        "ControlledShutdown response: remaining_partitions[0]: expected TopicPartition, got PartitionError"
    )


def test_error_codes_encode_as_ints() -> None:
    encoded = encode_body(SAMPLES[ApiKey.UPDATE_METADATA][1])
    assert encoded == {"error_code": 11}


def test_declaring_an_int_without_a_width_is_refused() -> None:
    @dataclass(slots=True)
    class Unsized:
        count: int

    with pytest.raises(TypeError, match="Int8, Int16, Int32 or Int64"):
        encode_body(Unsized(count=1))


# --- request envelopes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (b"\xc1", "request is not msgpack"),
        (b"", "request is not msgpack"),
        (msgpack.packb({"a": 1}) + b"\x00", "request is not msgpack"),
        (msgpack.packb([0, 0, 1, None, {}]), "request is not a map: got list"),
        (msgpack.packb("hello"), "request is not a map: got str"),
        (raw_request({}, correlation_id="x"), "request header: correlation_id: expected int32, got str"),
        (
            msgpack.packb({"api_key": 0, "api_version": 0, "client_id": None, "body": {}}),
            "request header: correlation_id: missing required field",
        ),
        (raw_request({}, api_key=True), "request header: api_key: expected int16, got bool"),
    ],
)
def test_malformed_requests(payload: bytes, match: str) -> None:
    with pytest.raises(MalformedRequestError, match=match) as info:
        decode_request(payload)
    assert info.value.error_code is ErrorCode.CORRUPT_MESSAGE


def test_unknown_api_key_carries_the_header() -> None:
    with pytest.raises(UnknownApiError, match="unknown api key 999") as info:
        decode_request(raw_request({}, api_key=999))
    assert info.value.header == RequestHeader(api_key=999, api_version=0, correlation_id=9, client_id=None)
    assert info.value.error_code is ErrorCode.INVALID_REQUEST


def test_unsupported_version_carries_the_header() -> None:
    with pytest.raises(
        UnsupportedVersionError, match=r"Fetch version 3 is not supported \(supported: 0..0\)"
    ) as info:
        decode_request(raw_request({}, api_key=ApiKey.FETCH, api_version=3))
    assert info.value.header.correlation_id == 9
    assert info.value.header.api_version == 3
    assert info.value.error_code is ErrorCode.UNSUPPORTED_VERSION


def test_invalid_body_carries_the_header_and_path() -> None:
    with pytest.raises(InvalidRequestError) as info:
        decode_request(raw_request(produce_body(partition="2")))
    assert str(info.value) == "Produce request: topics[0].partitions[2].partition: expected int32, got str"
    assert info.value.header.correlation_id == 9
    assert info.value.error_code is ErrorCode.INVALID_REQUEST


def test_missing_body_is_an_invalid_request() -> None:
    payload = msgpack.packb({"api_key": 18, "api_version": 0, "correlation_id": 3, "client_id": "c"})
    with pytest.raises(InvalidRequestError, match="ApiVersions request: missing body") as info:
        decode_request(payload)
    assert info.value.header.correlation_id == 3


def test_error_hierarchy() -> None:
    for error in (MalformedRequestError, MalformedResponseError, ValidationError, RequestRejectedError):
        assert issubclass(error, ProtocolError)
    for error in (UnknownApiError, UnsupportedVersionError, InvalidRequestError):
        assert issubclass(error, RequestRejectedError)
    assert issubclass(ProtocolError, ValueError)


def test_encode_request_refuses_an_unknown_api_key() -> None:
    with pytest.raises(ValueError, match="unknown api key 999"):
        encode_request(header(999), ApiVersionsRequest())


# --- response envelopes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (b"\xc1", "response is not msgpack"),
        (msgpack.packb([1]), "response is not a map: got list"),
        (
            msgpack.packb({"error_code": 0, "error_message": None, "body": {"error_code": 0}}),
            "response header: correlation_id: missing required field",
        ),
        (
            msgpack.packb({"correlation_id": 1, "error_code": 0, "error_message": None, "body": None}),
            "UpdateMetadata response: no body and no error code",
        ),
        (
            msgpack.packb({"correlation_id": 1, "error_code": 0, "error_message": None, "body": {}}),
            "UpdateMetadata response: error_code: missing required field",
        ),
    ],
)
def test_malformed_responses(payload: bytes, match: str) -> None:
    with pytest.raises(MalformedResponseError, match=match):
        decode_response(payload, ApiKey.UPDATE_METADATA)


# --- fuzzing --------------------------------------------------------------------------------

msgpack_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()
    | st.text(max_size=8)
    | st.binary(max_size=8)
    | st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=12))
    | st.builds(msgpack.Timestamp, st.integers(0, 2**34 - 1), st.integers(0, 999_999_999)),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)


def assert_only_protocol_errors(payload: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decode_request(payload)


@settings(max_examples=300)
@given(st.binary(max_size=64))
def test_fuzz_arbitrary_bytes(payload: bytes) -> None:
    assert_only_protocol_errors(payload)


@settings(max_examples=300)
@given(msgpack_values)
def test_fuzz_arbitrary_msgpack(value: Any) -> None:
    assert_only_protocol_errors(msgpack.packb(value))


def field_names() -> st.SearchStrategy[str]:
    """Field names that occur in the declarations, so random maps reach deep into the bodies."""
    names = set()
    for request, response in SAMPLES.values():
        for message in (request, response):
            stack = [encode_body(message)]
            while stack:
                node = stack.pop()
                if isinstance(node, dict):
                    names.update(node)
                    stack.extend(node.values())
                elif isinstance(node, list):
                    stack.extend(node)
    return st.sampled_from(sorted(names))


body_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.text(max_size=4)
    | st.binary(max_size=4),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(field_names(), children, max_size=6),
    max_leaves=30,
)


@settings(max_examples=500)
@given(st.sampled_from(sorted(APIS)), body_values)
def test_fuzz_bodies_behind_a_valid_header(api_key: int, body: Any) -> None:
    assert_only_protocol_errors(raw_request(body, api_key=api_key))
    response = {"correlation_id": 1, "error_code": 0, "error_message": None, "body": body}
    with contextlib.suppress(ProtocolError):
        decode_response(msgpack.packb(response), api_key)


@settings(max_examples=200, deadline=None)  # no timing: a loaded machine makes any deadline flaky
@given(st.sampled_from(sorted(SAMPLES)), st.data())
def test_fuzz_truncated_and_flipped_valid_requests(api_key: int, data: st.DataObject) -> None:
    payload = bytearray(encode_request(header(api_key), SAMPLES[api_key][0]))
    cut = data.draw(st.integers(0, len(payload)))
    flip = data.draw(st.integers(0, len(payload) - 1))
    payload[flip] ^= data.draw(st.integers(1, 255))
    assert_only_protocol_errors(bytes(payload))
    assert_only_protocol_errors(bytes(payload[:cut]))


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.sampled_from([0, 10, 65535, 65536, 200_000]), max_size=5), data=st.data())
def test_response_parts_are_the_response_with_large_records_left_uncopied(sizes: list[int], data: Any) -> None:
    records = [data.draw(st.binary(min_size=size, max_size=size)) if size < 1000 else bytes([size % 251]) * size
               for size in sizes]
    response = FetchResponse(error_code=0, topics=[Topic(name="t", partitions=[FetchPartitionResponse(
        partition=i, error_code=0, high_watermark=1, records=r) for i, r in enumerate(records)])])
    parts = encode_response_parts(7, response)
    assert b"".join(parts) == encode_response(7, response)
    assert sum(any(part is r for part in parts) for r in records if len(r) >= PASS_THROUGH_BYTES) == sum(
        len(r) >= PASS_THROUGH_BYTES for r in records)
