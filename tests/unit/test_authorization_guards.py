"""The guard of each request type, around a stub handler and a stub authorizer: what reaches the handler, and the
codes the refused entries are answered with (KafkaApis' authorize calls)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from broker.apis.acls import AclApis
from broker.apis.authorization import GUARDS, UNGUARDED
from broker.apis.config_changes import ConfigChanges
from broker.apis.kafka_apis import KafkaApis
from broker.apis.scram_credentials import UserScramCredentialStore
from broker.network import CLOSE_CONNECTION, Request, Response
from protocol.acls import AclOperation, ResourceType
from protocol.apis.acls import (
    AclEntryDescription,
    AclFilter,
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
)
from protocol.apis.api_versions import ApiVersionsRequest
from protocol.apis.cluster import DescribeClusterRequest
from protocol.apis.fetch import FetchPartition, FetchRequest
from protocol.apis.group_offsets import (
    FetchedOffset,
    OffsetFetchGroup,
    OffsetFetchGroupResult,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from protocol.apis.groups import JoinGroupRequest
from protocol.apis.metadata import MetadataRequest, MetadataResponse, MetadataTopic
from protocol.apis.offsets import (
    OffsetForLeaderPartition,
    OffsetForLeaderPartitionResult,
    OffsetForLeaderTopic,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from protocol.apis.produce import ProducePartition, ProducePartitionResponse, ProduceRequest, ProduceResponse
from protocol.apis.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from protocol.apis.replica_control import LeaderAndIsrRequest
from protocol.apis.sasl import SaslAuthenticateRequest, SaslHandshakeRequest
from protocol.apis.shapes import Topic
from protocol.apis.topics import CreatableTopic, CreatableTopicResult, CreateTopicsRequest, CreateTopicsResponse
from protocol.envelope import RequestHeader
from protocol.errors import ErrorCode

REQUEST = Request(RequestHeader(api_key=0, api_version=0, correlation_id=1, client_id="c"), None, "127.0.0.1:5000-1",
                  10)


@dataclass
class StubAuthorizer:
    """Allows everything but `refused` (operation, resource type, name); WRITE on some topic unless told not."""

    refused: set[tuple[AclOperation, ResourceType, str]] = field(default_factory=set)
    write_somewhere: bool = True
    asked: list[tuple[AclOperation, ResourceType, str, str]] = field(default_factory=list)

    def authorize(self, request: Request, operation: AclOperation, resource_type: ResourceType, name: str,
                  *, log_if_denied: bool = True) -> bool:
        self.asked.append((operation, resource_type, name, request.principal))
        return (operation, resource_type, name) not in self.refused

    def authorize_any(self, _request: Request, _operation: AclOperation, _resource_type: ResourceType) -> bool:
        return self.write_somewhere


class StubHandler:
    """Records what it is given; answers with `answer(body)`."""

    def __init__(self, answer: Any) -> None:
        self.bodies: list[Any] = []
        self._answer = answer

    async def __call__(self, body: Any, _request: Request) -> Any:
        self.bodies.append(body)
        return self._answer(body)


def guarded(request_type: type, authorizer: StubAuthorizer, handler: StubHandler) -> Any:
    return GUARDS[request_type](authorizer, handler)


def produce(*topics: str, acks: int = -1) -> ProduceRequest:
    return ProduceRequest(acks=acks, timeout_ms=100, topics=[
        Topic(name=t, partitions=[ProducePartition(partition=0, records=b"")]) for t in topics])


def produced(body: ProduceRequest) -> ProduceResponse:
    return ProduceResponse(topics=[Topic(name=t.name, partitions=[ProducePartitionResponse(
        partition=0, error_code=0, base_offset=7)]) for t in body.topics])


def codes(response: ProduceResponse) -> dict[str, int]:
    return {t.name: t.partitions[0].error_code for t in response.topics}


def test_every_request_has_a_guard_or_is_open_to_anyone() -> None:
    apis = KafkaApis(0, lambda: -1, SimpleNamespace(config=None), None, None, None, None, None, None, None,  # type: ignore[arg-type]
                     ConfigChanges(None, dict), None, None, UserScramCredentialStore(None))  # type: ignore[arg-type]
    assert set(GUARDS) == apis.request_types - UNGUARDED
    assert {ApiVersionsRequest, DescribeClusterRequest, SaslHandshakeRequest, SaslAuthenticateRequest} == UNGUARDED


def test_produce_writes_the_allowed_topics_and_refuses_the_others() -> None:
    authorizer = StubAuthorizer({(AclOperation.WRITE, ResourceType.TOPIC, "secret")})
    handler = StubHandler(lambda body: Response(produced(body)))
    answer = asyncio.run(guarded(ProduceRequest, authorizer, handler)(produce("open", "secret"), REQUEST))
    assert [t.name for t in handler.bodies[0].topics] == ["open"]
    assert codes(answer.body) == {"open": 0, "secret": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert ("secret", "User:ANONYMOUS") in {(name, who) for _, _, name, who in authorizer.asked}


def test_a_delayed_produce_answer_gets_the_refused_topics_too() -> None:
    async def run() -> ProduceResponse:
        future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        handler = StubHandler(lambda _body: future)
        authorizer = StubAuthorizer({(AclOperation.WRITE, ResourceType.TOPIC, "secret")})
        pending = await guarded(ProduceRequest, authorizer, handler)(produce("open", "secret"), REQUEST)
        future.set_result(Response(produced(handler.bodies[0])))
        return (await pending).body

    assert codes(asyncio.run(run())) == {"open": 0, "secret": ErrorCode.TOPIC_AUTHORIZATION_FAILED}


def test_a_refused_acks_0_produce_closes_the_connection_and_writes_nothing() -> None:
    handler = StubHandler(lambda body: Response(produced(body)))
    authorizer = StubAuthorizer({(AclOperation.WRITE, ResourceType.TOPIC, "secret")})
    answer = asyncio.run(guarded(ProduceRequest, authorizer, handler)(produce("secret", acks=0), REQUEST))
    assert answer is CLOSE_CONNECTION and handler.bodies == []


def fetch(replica_id: int) -> FetchRequest:
    return FetchRequest(replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=100, topics=[
        Topic(name="t", partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=100)])])


def test_a_follower_fetch_needs_cluster_action_and_a_consumer_fetch_read() -> None:
    handler = StubHandler(lambda _body: Response(None))
    no_cluster_action = StubAuthorizer({(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, "kafka-cluster")})
    refused = asyncio.run(guarded(FetchRequest, no_cluster_action, handler)(fetch(2), REQUEST))
    assert refused.body.topics[0].partitions[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    asyncio.run(guarded(FetchRequest, no_cluster_action, handler)(fetch(-1), REQUEST))
    assert len(handler.bodies) == 1  # the consumer's, READ allowed
    no_read = StubAuthorizer({(AclOperation.READ, ResourceType.TOPIC, "t")})
    refused = asyncio.run(guarded(FetchRequest, no_read, handler)(fetch(-1), REQUEST))
    assert refused.body.topics[0].partitions[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert len(handler.bodies) == 1


def offsets_fetched(body: OffsetFetchRequest) -> Response:
    """Offset 3 of each partition asked for, or of partition 0 of "open" and "secret" (all topics)."""
    return Response(OffsetFetchResponse(groups=[OffsetFetchGroupResult(group_id=g.group_id, topics=[
        Topic(name=t.name, partitions=[FetchedOffset(partition=p, offset=3) for p in t.partitions])
        for t in (g.topics if g.topics is not None else [Topic(name="open", partitions=[0]),
                                                          Topic(name="secret", partitions=[0])])])
        for g in body.groups]))


def fetched(response: OffsetFetchResponse) -> dict[tuple[str, str, int], tuple[int, int]]:
    return {(g.group_id, t.name, p.partition): (p.offset, p.error_code) for g in response.groups for t in g.topics
            for p in t.partitions}


def test_offset_fetch_answers_named_topics_not_described_with_topic_authorization_failed() -> None:
    authorizer = StubAuthorizer({(AclOperation.DESCRIBE, ResourceType.TOPIC, "secret"),
                                 (AclOperation.DESCRIBE, ResourceType.GROUP, "hidden")})
    handler = StubHandler(offsets_fetched)
    named = [Topic(name="open", partitions=[0]), Topic(name="secret", partitions=[0, 1])]
    request = OffsetFetchRequest(groups=[OffsetFetchGroup(group_id="g", topics=named),
                                         OffsetFetchGroup(group_id="all"), OffsetFetchGroup(group_id="hidden")])
    answer = asyncio.run(guarded(OffsetFetchRequest, authorizer, handler)(request, REQUEST))
    denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert fetched(answer.body) == {("g", "open", 0): (3, 0), ("g", "secret", 0): (-1, denied),
                                    ("g", "secret", 1): (-1, denied), ("all", "open", 0): (3, 0)}
    assert {g.group_id: g.error_code for g in answer.body.groups} == {
        "g": 0, "all": 0, "hidden": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    [asked] = handler.bodies
    assert [(g.group_id, g.topics) for g in asked.groups] == [("g", named[:1]), ("all", None)]


def epochs_asked(*topics: str, replica_id: int = -1) -> OffsetsForLeaderEpochRequest:
    return OffsetsForLeaderEpochRequest(replica_id=replica_id, topics=[OffsetForLeaderTopic(topic=t, partitions=[
        OffsetForLeaderPartition(partition=0, leader_epoch=1)]) for t in topics])


def epochs_answered(body: OffsetsForLeaderEpochRequest) -> Response:
    return Response(OffsetsForLeaderEpochResponse(topics=[OffsetForLeaderTopic(topic=t.topic, partitions=[
        OffsetForLeaderPartitionResult(error_code=0, partition=0, leader_epoch=1, end_offset=9)])
        for t in body.topics]))


def test_offsets_for_leader_epoch_needs_cluster_action_or_describe_on_each_topic() -> None:
    no_cluster_action = (AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, "kafka-cluster")
    handler = StubHandler(epochs_answered)
    replica = StubAuthorizer({(AclOperation.DESCRIBE, ResourceType.TOPIC, "secret")})
    answer = asyncio.run(guarded(OffsetsForLeaderEpochRequest, replica, handler)(
        epochs_asked("open", "secret", replica_id=2), REQUEST))
    assert {t.topic: t.partitions[0].error_code for t in answer.body.topics} == {"open": 0, "secret": 0}
    consumer = StubAuthorizer({no_cluster_action, (AclOperation.DESCRIBE, ResourceType.TOPIC, "secret")})
    for replica_id in (-1, 2):  # KafkaApis tells them apart by permission only
        answer = asyncio.run(guarded(OffsetsForLeaderEpochRequest, consumer, handler)(
            epochs_asked("open", "secret", replica_id=replica_id), REQUEST))
        assert {t.topic: t.partitions[0].error_code for t in answer.body.topics} == {
            "open": 0, "secret": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert [[t.topic for t in b.topics] for b in handler.bodies] == [["open", "secret"], ["open"], ["open"]]


def test_create_topics_withholds_the_configs_of_a_topic_not_described() -> None:
    authorizer = StubAuthorizer({(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, "hidden"),
                                 (AclOperation.CREATE, ResourceType.CLUSTER, "kafka-cluster"),
                                 (AclOperation.CREATE, ResourceType.TOPIC, "refused")})
    handler = StubHandler(lambda body: Response(CreateTopicsResponse(topics=[CreatableTopicResult(
        name=t.name, error_code=0, num_partitions=1, replication_factor=1, configs=[]) for t in body.topics])))
    request = CreateTopicsRequest(topics=[CreatableTopic(name=n, num_partitions=1, replication_factor=1)
                                          for n in ("open", "hidden", "refused")], timeout_ms=100)
    answer = asyncio.run(guarded(CreateTopicsRequest, authorizer, handler)(request, REQUEST))
    results = {t.name: (t.error_code, t.num_partitions, t.configs, t.topic_config_error_code)
               for t in answer.body.topics}
    denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert results == {"open": (0, 1, [], 0), "hidden": (0, -1, None, denied), "refused": (denied, -1, None, 0)}
    assert [t.name for t in handler.bodies[0].topics] == ["open", "hidden"]


def metadata_answer(body: MetadataRequest) -> Response:
    names = body.topics if body.topics is not None else ["open", "secret"]
    return Response(MetadataResponse(brokers=[], controller_id=1, topics=[
        MetadataTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if n.startswith("new") else 0, name=n,
                      partitions=[]) for n in names]))


def topic_codes(response: MetadataResponse) -> dict[str, int]:
    return {t.name: t.error_code for t in response.topics}


def test_metadata_of_all_topics_leaves_out_those_not_described() -> None:
    authorizer = StubAuthorizer({(AclOperation.DESCRIBE, ResourceType.TOPIC, "secret")})
    answer = asyncio.run(guarded(MetadataRequest, authorizer, StubHandler(metadata_answer))(MetadataRequest(),
                                                                                              REQUEST))
    assert topic_codes(answer.body) == {"open": 0}


def test_metadata_of_named_topics_refuses_those_not_described() -> None:
    authorizer = StubAuthorizer({(AclOperation.DESCRIBE, ResourceType.TOPIC, "secret")})
    handler = StubHandler(metadata_answer)
    answer = asyncio.run(guarded(MetadataRequest, authorizer, handler)(MetadataRequest(topics=["open", "secret"]),
                                                                       REQUEST))
    assert topic_codes(answer.body) == {"open": 0, "secret": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert all("secret" not in body.topics for body in handler.bodies)


def test_metadata_creates_a_missing_topic_only_with_create() -> None:
    authorizer = StubAuthorizer({(AclOperation.CREATE, ResourceType.CLUSTER, "kafka-cluster"),
                                 (AclOperation.CREATE, ResourceType.TOPIC, "new-b")})
    handler = StubHandler(metadata_answer)
    request = MetadataRequest(topics=["new-a", "new-b"], allow_auto_topic_creation=True)
    answer = asyncio.run(guarded(MetadataRequest, authorizer, handler)(request, REQUEST))
    assert topic_codes(answer.body) == {"new-a": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                        "new-b": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    creating = [b.topics for b in handler.bodies if b.allow_auto_topic_creation]
    assert creating == [["new-a"]]


def test_group_apis_need_read_on_the_group() -> None:
    authorizer = StubAuthorizer({(AclOperation.READ, ResourceType.GROUP, "g")})
    handler = StubHandler(lambda _body: Response(None))
    join = JoinGroupRequest(group_id="g", session_timeout_ms=1, rebalance_timeout_ms=1, protocol_type="consumer",
                            protocols=[])
    answer = asyncio.run(guarded(JoinGroupRequest, authorizer, handler)(join, REQUEST))
    assert answer.body.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED and handler.bodies == []


def test_broker_to_broker_requests_need_cluster_action() -> None:
    authorizer = StubAuthorizer({(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, "kafka-cluster")})
    handler = StubHandler(lambda _body: Response(None))
    body = LeaderAndIsrRequest(controller_id=1, controller_epoch=1, broker_epoch=1, partition_states=[],
                               live_leaders=[])
    answer = asyncio.run(guarded(LeaderAndIsrRequest, authorizer, handler)(body, REQUEST))
    assert answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and handler.bodies == []


def test_an_idempotent_producer_needs_idempotent_write_or_write_on_some_topic() -> None:
    handler = StubHandler(lambda _body: Response(InitProducerIdResponse(error_code=0, producer_id=5)))
    cluster_refused = {(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, "kafka-cluster")}
    allowed = asyncio.run(guarded(InitProducerIdRequest, StubAuthorizer(cluster_refused), handler)(
        InitProducerIdRequest(), REQUEST))
    assert allowed.body.producer_id == 5
    refused = asyncio.run(guarded(InitProducerIdRequest, StubAuthorizer(cluster_refused, write_somewhere=False),
                                  handler)(InitProducerIdRequest(), REQUEST))
    assert refused.body.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    transactional = asyncio.run(guarded(InitProducerIdRequest, StubAuthorizer(
        {(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "tx")}), handler)(
        InitProducerIdRequest(transactional_id="tx"), REQUEST))
    assert transactional.body.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_acl_apis_answer_security_disabled_without_an_authorizer() -> None:
    apis = AclApis(None)
    acl_filter = AclFilter(resource_type_filter=1, operation=1, permission_type=1)
    described = asyncio.run(apis.handle_describe_acls(DescribeAclsRequest(filter=acl_filter), REQUEST))
    created = asyncio.run(apis.handle_create_acls(CreateAclsRequest(creations=[AclEntryDescription(
        resource_type=2, resource_name="t", principal="User:a", host="*", operation=3, permission_type=3)]),
        REQUEST))
    deleted = asyncio.run(apis.handle_delete_acls(DeleteAclsRequest(filters=[acl_filter]), REQUEST))
    assert described.body.error_code == ErrorCode.SECURITY_DISABLED
    assert created.body.results[0].error_code == ErrorCode.SECURITY_DISABLED
    assert deleted.body.filter_results[0].error_code == ErrorCode.SECURITY_DISABLED


class MemoryStore:
    def __init__(self) -> None:
        self.created: list[Any] = []

    def describe(self, _acl_filter: Any) -> list[Any]:
        return []

    async def create(self, bindings: Any) -> None:
        self.created.extend(bindings)

    async def delete(self, bindings: Any) -> None:
        pass


def test_create_acls_refuses_a_malformed_binding_and_creates_the_others() -> None:
    store = MemoryStore()
    good = AclEntryDescription(resource_type=2, resource_name="t", principal="User:a", host="*", operation=3,
                               permission_type=3)
    cluster_misnamed = AclEntryDescription(resource_type=4, resource_name="c", principal="User:a", host="*",
                                           operation=3, permission_type=3)
    unknown_operation = AclEntryDescription(resource_type=2, resource_name="t", principal="User:a", host="*",
                                            operation=99, permission_type=3)
    answer = asyncio.run(AclApis(store).handle_create_acls(
        CreateAclsRequest(creations=[good, cluster_misnamed, unknown_operation]), REQUEST))
    assert [r.error_code for r in answer.body.results] == [0, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST]
    assert [b.pattern.name for b in store.created] == ["t"]


def test_a_request_level_error_of_the_handler_is_passed_on() -> None:
    authorizer = StubAuthorizer({(AclOperation.WRITE, ResourceType.TOPIC, "secret"),
                                 (AclOperation.DESCRIBE, ResourceType.TOPIC, "secret")})
    failing = StubHandler(lambda _body: Response(None, ErrorCode.INVALID_REQUEST, "bad"))
    for request_type, body in ((ProduceRequest, produce("open", "secret")), (MetadataRequest, MetadataRequest())):
        answer = asyncio.run(guarded(request_type, authorizer, failing)(body, REQUEST))
        assert (answer.body, answer.error_code) == (None, ErrorCode.INVALID_REQUEST)
