"""The api table: every RPC minikafka serves, registered by its family, in the order ApiVersions lists them.

Each module of this package is one api family (Kafka's grouping): its messages (dataclasses the generic codec of
protocol.codec reads), one `Api` registration per api, each api's error response, and its Kafka-wire codec where
the Kafka listener serves it. Both codecs read the tables here: minikafka's own (protocol.envelope) reads APIS,
the Kafka listener reads KAFKA_APIS, and each lists what it serves in ApiVersions; so an api is listed here once the
broker has its handler (broker/apis/kafka_apis.py), never before.
"""

from protocol.apis import (
    acls,
    api_versions,
    cluster,
    config_changes,
    configs,
    elections,
    fetch,
    group_admin,
    group_offsets,
    groups,
    log_dirs,
    metadata,
    offsets,
    produce,
    producer_ids,
    producers,
    quotas,
    reassignments,
    records_deletion,
    replica_control,
    replicas,
    sasl,
    scram_credentials,
    topics,
)
from protocol.apis.api import Api
from protocol.apis.api_versions import ApiVersionRange
from protocol.codec import declare
from protocol.kafka.api import KafkaApi, KafkaCodec, serve

APIS: dict[int, Api] = {api.api_key: api for api in (
    produce.PRODUCE,
    fetch.FETCH,
    offsets.LIST_OFFSETS,
    metadata.METADATA,
    replica_control.LEADER_AND_ISR,
    replica_control.STOP_REPLICA,
    replica_control.UPDATE_METADATA,
    replica_control.CONTROLLED_SHUTDOWN,
    group_offsets.OFFSET_COMMIT,
    group_offsets.OFFSET_FETCH,
    groups.FIND_COORDINATOR,
    groups.JOIN_GROUP,
    groups.HEARTBEAT,
    groups.LEAVE_GROUP,
    groups.SYNC_GROUP,
    group_admin.DESCRIBE_GROUPS,
    group_admin.LIST_GROUPS,
    sasl.SASL_HANDSHAKE,
    api_versions.API_VERSIONS,
    topics.CREATE_TOPICS,
    topics.DELETE_TOPICS,
    producer_ids.INIT_PRODUCER_ID,
    acls.DESCRIBE_ACLS,
    acls.CREATE_ACLS,
    acls.DELETE_ACLS,
    configs.DESCRIBE_CONFIGS,
    offsets.OFFSETS_FOR_LEADER_EPOCH,
    topics.CREATE_PARTITIONS,
    group_admin.DELETE_GROUPS,
    elections.ELECT_LEADERS,
    reassignments.ALTER_PARTITION_REASSIGNMENTS,
    reassignments.LIST_PARTITION_REASSIGNMENTS,
    group_offsets.OFFSET_DELETE,
    records_deletion.DELETE_RECORDS,
    log_dirs.DESCRIBE_LOG_DIRS,
    sasl.SASL_AUTHENTICATE,
    config_changes.ALTER_CONFIGS,
    config_changes.INCREMENTAL_ALTER_CONFIGS,
    quotas.DESCRIBE_CLIENT_QUOTAS,
    scram_credentials.DESCRIBE_USER_SCRAM_CREDENTIALS,
    scram_credentials.ALTER_USER_SCRAM_CREDENTIALS,
    cluster.DESCRIBE_CLUSTER,
    producers.DESCRIBE_PRODUCERS,
    replicas.DESCRIBE_REPLICAS,
)}

API_BY_REQUEST_TYPE: dict[type, Api] = {api.request: api for api in APIS.values()}

# Every message is named in errors by its api ("Produce request: ..."), and its codec is built now.
for _api in APIS.values():
    declare(_api.request, f"{_api.name} request")
    declare(_api.response, f"{_api.name} response")


def supported_api_versions() -> list[ApiVersionRange]:
    """minikafka's own ApiVersions answer: every api in APIS with its version range."""
    return [
        ApiVersionRange(api_key=api.api_key, min_version=api.min_version, max_version=api.max_version)
        for api in APIS.values()
    ]


def _kafka_api(api: Api, codec: KafkaCodec) -> KafkaApi:
    if api.error_response is None:
        raise TypeError(f"{api.name} is served on Kafka's wire without an error response")
    return KafkaApi(api.api_key, codec.name, codec.versions, codec.flexible, codec.decode, codec.encode,
                    api.error_response)


#: What the Kafka listener serves and ApiVersions advertises on Kafka's wire: the apis of APIS with a Kafka codec.
KAFKA_APIS: dict[int, KafkaApi] = serve(_kafka_api(api, api.kafka) for api in APIS.values() if api.kafka is not None)
