"""What each request must be allowed to do, as Kafka's KafkaApis authorizes it: one guard per request type,
wrapped around its handler when an authorizer is configured.

- `whole`: one resource for the whole request (a group's, the cluster's); refused, the api's error response
  answers every entry with the code.
- `per_item`: each entry of a list on its own resource (Produce's topics, DeleteTopics' names); the refused
  entries are answered with the code, the others served.
- `cluster_or`: an operation on the cluster allows the whole request, else each entry is authorized (CreateTopics,
  OffsetsForLeaderEpoch: a follower's CLUSTER_ACTION, or a consumer's DESCRIBE on each topic).
- Metadata and OffsetFetch leave out the topics a principal may not DESCRIBE when they ask for all, answer
  TOPIC_AUTHORIZATION_FAILED for those they name; Metadata creates a missing topic only with CREATE on the cluster
  or the topic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from broker.apis.handler import Handled, Handler, then
from broker.network import CLOSE_CONNECTION, Request, Response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.apis import API_BY_REQUEST_TYPE
from protocol.apis.acls import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from protocol.apis.api_versions import ApiVersionsRequest
from protocol.apis.cluster import DescribeClusterRequest
from protocol.apis.config_changes import AlterConfigsRequest, IncrementalAlterConfigsRequest
from protocol.apis.configs import ConfigResourceType, DescribeConfigsRequest
from protocol.apis.elections import ElectLeadersRequest
from protocol.apis.fetch import FetchRequest
from protocol.apis.group_admin import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from protocol.apis.group_offsets import (
    FetchedOffset,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchGroupResult,
    OffsetFetchRequest,
)
from protocol.apis.groups import (
    CoordinatorType,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from protocol.apis.log_dirs import DescribeLogDirsRequest
from protocol.apis.metadata import MetadataRequest, MetadataResponse, MetadataTopic
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
from protocol.apis.shapes import Topic
from protocol.apis.topics import (
    CreatableTopicResult,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
)
from protocol.errors import ErrorCode

Op = AclOperation
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TRANSACTIONAL_ID_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


class Authorizer(Protocol):
    """What the guards ask."""

    def authorize(self, request: Request, operation: AclOperation, resource_type: ResourceType, name: str,
                  *, log_if_denied: bool = True) -> bool: ...

    def authorize_any(self, request: Request, operation: AclOperation, resource_type: ResourceType) -> bool: ...


#: A check: (operation, resource type, resource name, the code a refusal answers).
Check = tuple[AclOperation, ResourceType, str, ErrorCode]
Guard = Callable[[Authorizer, Handler], Handler]


def _refused(body: Any, code: ErrorCode) -> Response:
    error_response = API_BY_REQUEST_TYPE[type(body)].error_response
    if error_response is None:  # an api of minikafka's own wire only: the error in the response header
        return Response(None, code, f"{code.name}: not authorized")
    return Response(error_response(body, code, None))


def whole(check: Callable[[Any], Check]) -> Guard:
    """Authorize the request on one resource."""
    def wrap(authorizer: Authorizer, handler: Handler) -> Handler:
        async def guarded(body: Any, request: Request) -> Handled:
            operation, resource_type, name, code = check(body)
            if not authorizer.authorize(request, operation, resource_type, name):
                return _refused(body, code)
            return await handler(body, request)
        return guarded
    return wrap


def cluster(operation: AclOperation) -> Guard:
    """The request needs `operation` on the cluster."""
    return whole(lambda _body: (operation, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_DENIED))


def group(operation: AclOperation) -> Guard:
    """The request needs `operation` on its group (`group_id`)."""
    return whole(lambda body: (operation, ResourceType.GROUP, body.group_id, GROUP_DENIED))


@dataclass(frozen=True)
class PerItem:
    """Authorize each entry of the request's list `field` on its own; the response lists entries in `answers`."""

    field: str
    answers: str
    check: Callable[[Any], Check]

    def __call__(self, authorizer: Authorizer, handler: Handler) -> Handler:
        async def guarded(body: Any, request: Request) -> Handled:
            allowed: list[Any] = []
            refused: dict[ErrorCode, list[Any]] = {}
            for item in getattr(body, self.field):
                operation, resource_type, name, code = self.check(item)
                if authorizer.authorize(request, operation, resource_type, name):
                    allowed.append(item)
                else:
                    refused.setdefault(code, []).append(item)
            if not refused:
                return await handler(body, request)
            if not allowed and getattr(body, "acks", None) == 0:
                return CLOSE_CONNECTION  # a producer that reads no answers is told so (see broker.apis.handler.then)
            answers = [entry for code, items in refused.items()
                       for entry in getattr(_refused(replace(body, **{self.field: items}), code).body, self.answers)]
            if not allowed:
                return _with(_refused(body, next(iter(refused))), self.answers, answers)
            served = await handler(replace(body, **{self.field: allowed}), request)
            return then(served, lambda response: response if response.body is None else _with(
                response, self.answers, [*getattr(response.body, self.answers), *answers]))
        return guarded


def _with(response: Response, answers: str, entries: list) -> Response:
    """The response with its list `answers` replaced by `entries`."""
    return Response(replace(response.body, **{answers: entries}), response.error_code, response.error_message)


def topics(operation: AclOperation, field: str = "topics", answers: str = "topics",
           name: Callable[[Any], str] = lambda item: item.name) -> PerItem:
    """Each topic of the request needs `operation`."""
    return PerItem(field, answers, lambda item: (operation, ResourceType.TOPIC, name(item), TOPIC_DENIED))


def chain(*guards: Guard) -> Guard:
    """The guards in order: the first refuses first."""
    def wrap(authorizer: Authorizer, handler: Handler) -> Handler:
        for guard in reversed(guards):
            handler = guard(authorizer, handler)
        return handler
    return wrap


def follower_or(topic_guard: Guard) -> Guard:
    """A follower's request (replica_id >= 0) needs CLUSTER_ACTION (refused: TOPIC_AUTHORIZATION_FAILED for every
    partition, as KafkaApis answers a follower's Fetch), a consumer's the topic guard."""
    def wrap(authorizer: Authorizer, handler: Handler) -> Handler:
        as_follower = whole(lambda _body: (Op.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME, TOPIC_DENIED))(
            authorizer, handler)
        as_consumer = topic_guard(authorizer, handler)

        async def guarded(body: Any, request: Request) -> Handled:
            return await (as_follower if body.replica_id >= 0 else as_consumer)(body, request)
        return guarded
    return wrap


def _config_resource(operation: AclOperation) -> Callable[[Any], Check]:
    def check(resource: Any) -> Check:
        if resource.resource_type == ConfigResourceType.TOPIC:
            return operation, ResourceType.TOPIC, resource.resource_name, TOPIC_DENIED
        return operation, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_DENIED
    return check


def _coordinator_key(key_type: int) -> Callable[[str], Check]:
    def check(key: str) -> Check:
        if key_type == CoordinatorType.TRANSACTION:
            return Op.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key, TRANSACTIONAL_ID_DENIED
        return Op.DESCRIBE, ResourceType.GROUP, key, GROUP_DENIED
    return check


def find_coordinator(authorizer: Authorizer, handler: Handler) -> Handler:
    """DESCRIBE on each key's group (or transactional id)."""
    async def guarded(body: Any, request: Request) -> Handled:
        return await PerItem("keys", "coordinators", _coordinator_key(body.key_type))(authorizer, handler)(
            body, request)
    return guarded


def init_producer_id(authorizer: Authorizer, handler: Handler) -> Handler:
    """WRITE on the transactional id; without one, IDEMPOTENT_WRITE on the cluster or WRITE on some topic."""
    async def guarded(body: Any, request: Request) -> Handled:
        if body.transactional_id is not None:
            if not authorizer.authorize(request, Op.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id):
                return _refused(body, TRANSACTIONAL_ID_DENIED)
        elif not (authorizer.authorize(request, Op.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME,
                                       log_if_denied=False)
                  or authorizer.authorize_any(request, Op.WRITE, ResourceType.TOPIC)):
            return _refused(body, CLUSTER_DENIED)
        return await handler(body, request)
    return guarded


def _offset_fetch_topics(authorizer: Authorizer, handler: Handler) -> Handler:
    """Of the topics a group names, those the principal may not DESCRIBE are answered TOPIC_AUTHORIZATION_FAILED
    for each partition; of a group's every offset (no topics named), their offsets are left out."""
    async def guarded(body: OffsetFetchRequest, request: Request) -> Handled:
        def described(name: str, log_if_denied: bool) -> bool:
            return authorizer.authorize(request, Op.DESCRIBE, ResourceType.TOPIC, name, log_if_denied=log_if_denied)

        refused: dict[str, list[Topic[int]]] = {}
        groups = []
        for group in body.groups:
            if group.topics is not None:
                allowed = [described(t.name, True) for t in group.topics]
                refused[group.group_id] = [t for t, ok in zip(group.topics, allowed, strict=True) if not ok]
                group = replace(group, topics=[t for t, ok in zip(group.topics, allowed, strict=True) if ok])
            groups.append(group)

        def answered(result: OffsetFetchGroupResult) -> OffsetFetchGroupResult:
            if result.error_code != ErrorCode.NONE:
                return result
            if result.group_id not in refused:
                return replace(result, topics=[t for t in result.topics if described(t.name, False)])
            return replace(result, topics=[*result.topics, *(Topic(name=t.name, partitions=[
                FetchedOffset(partition=p, error_code=TOPIC_DENIED) for p in t.partitions])
                for t in refused[result.group_id])])

        served = await handler(replace(body, groups=groups), request)
        return then(served, lambda response: response if response.body is None else _with(
            response, "groups", [answered(g) for g in response.body.groups]))
    return guarded


#: DESCRIBE on each group (refused: GROUP_AUTHORIZATION_FAILED), then on each topic named.
offset_fetch = chain(PerItem("groups", "groups", lambda g: (Op.DESCRIBE, ResourceType.GROUP, g.group_id, GROUP_DENIED)),
                     _offset_fetch_topics)


def list_groups(authorizer: Authorizer, handler: Handler) -> Handler:
    """Every group with DESCRIBE on the cluster, else the groups the principal may DESCRIBE."""
    async def guarded(body: Any, request: Request) -> Handled:
        served = await handler(body, request)
        if authorizer.authorize(request, Op.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME, log_if_denied=False):
            return served
        return then(served, lambda response: response if response.body is None else _with(response, "groups", [
            g for g in response.body.groups
            if authorizer.authorize(request, Op.DESCRIBE, ResourceType.GROUP, g.group_id, log_if_denied=False)]))
    return guarded


def cluster_or(operation: AclOperation, per_item: Guard) -> Guard:
    """`operation` on the cluster allows the whole request; without it, each entry is authorized by `per_item`."""
    def wrap(authorizer: Authorizer, handler: Handler) -> Handler:
        guarded_items = per_item(authorizer, handler)

        async def guarded(body: Any, request: Request) -> Handled:
            if authorizer.authorize(request, operation, ResourceType.CLUSTER, CLUSTER_NAME, log_if_denied=False):
                return await handler(body, request)
            return await guarded_items(body, request)
        return guarded
    return wrap


def created_topic_configs(authorizer: Authorizer, handler: Handler) -> Handler:
    """Each topic of a CreateTopics the principal may not DESCRIBE_CONFIGS is answered with TOPIC_AUTHORIZATION_FAILED
    as its topic_config_error_code, and once created without its partition count, replication factor and configs
    (as KafkaApis, whatever the topic's own answer)."""
    async def guarded(body: CreateTopicsRequest, request: Request) -> Handled:
        def answered(result: CreatableTopicResult) -> CreatableTopicResult:
            if authorizer.authorize(request, Op.DESCRIBE_CONFIGS, ResourceType.TOPIC, result.name,
                                    log_if_denied=False):
                return result
            return replace(result, num_partitions=-1, replication_factor=-1, configs=None,
                           topic_config_error_code=TOPIC_DENIED)

        served = await handler(body, request)
        return then(served, lambda response: response if response.body is None else _with(
            response, "topics", [answered(t) for t in response.body.topics]))
    return guarded


def metadata(authorizer: Authorizer, handler: Handler) -> Handler:
    """DESCRIBE on each topic answered; creating a missing one needs CREATE on the cluster or the topic."""
    async def guarded(body: MetadataRequest, request: Request) -> Handled:
        def described(name: str, log_if_denied: bool) -> bool:
            return authorizer.authorize(request, Op.DESCRIBE, ResourceType.TOPIC, name, log_if_denied=log_if_denied)

        if body.topics is None:  # all topics: the others are left out
            served = await handler(body, request)
            return then(served, lambda r: r if r.body is None else _with(
                r, "topics", [t for t in r.body.topics if described(t.name, False)]))
        names = [n for n in body.topics if described(n, True)]
        refused = [MetadataTopic(error_code=TOPIC_DENIED, name=n, partitions=[]) for n in body.topics
                   if n not in names]
        creating = body.allow_auto_topic_creation and not authorizer.authorize(
            request, Op.CREATE, ResourceType.CLUSTER, CLUSTER_NAME, log_if_denied=False)
        may_create = [n for n in names if not creating or authorizer.authorize(request, Op.CREATE,
                                                                                ResourceType.TOPIC, n)]
        answer = await handler(replace(body, topics=may_create), request)
        assert isinstance(answer, Response)
        if answer.body is None:
            return answer
        response: MetadataResponse = answer.body
        answered = list(response.topics)
        kept_ids = [t for t in answered if t.name not in may_create]  # asked for by id
        answered = [t for t in answered if t.name in may_create]
        no_create = [n for n in names if n not in may_create]
        if no_create:
            plain = await handler(MetadataRequest(topics=no_create), request)
            assert isinstance(plain, Response) and plain.body is not None
            answered.extend(t if t.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                            else replace(t, error_code=TOPIC_DENIED) for t in plain.body.topics)
        kept_ids = [t if t.error_code != ErrorCode.NONE or described(t.name, True)
                    else MetadataTopic(error_code=TOPIC_DENIED, name="", partitions=[], topic_id=t.topic_id)
                    for t in kept_ids]
        return Response(replace(response, topics=[*answered, *refused, *kept_ids]))
    return guarded


def described_topic(authorizer: Authorizer | None) -> Callable[[Request, str], bool]:
    """Whether a request's principal may DESCRIBE a topic (any may, without an authorizer)."""
    if authorizer is None:
        return lambda _request, _name: True
    return lambda request, name: authorizer.authorize(request, Op.DESCRIBE, ResourceType.TOPIC, name)


#: The request types anyone may send (Kafka authorizes none of them; SASL's run before a principal is known).
UNGUARDED: frozenset[type] = frozenset({ApiVersionsRequest, DescribeClusterRequest, SaslHandshakeRequest,
                                        SaslAuthenticateRequest})

#: The guard of every other request type.
GUARDS: dict[type, Guard] = {
    MetadataRequest: metadata,
    ProduceRequest: topics(Op.WRITE),
    FetchRequest: follower_or(topics(Op.READ)),
    ListOffsetsRequest: topics(Op.DESCRIBE),
    OffsetsForLeaderEpochRequest: cluster_or(Op.CLUSTER_ACTION, topics(Op.DESCRIBE, name=lambda item: item.topic)),
    DeleteRecordsRequest: topics(Op.DELETE),
    DescribeProducersRequest: topics(Op.READ),
    DescribeUserScramCredentialsRequest: cluster(Op.DESCRIBE),
    AlterUserScramCredentialsRequest: cluster(Op.ALTER),
    DescribeClientQuotasRequest: cluster(Op.DESCRIBE_CONFIGS),
    InitProducerIdRequest: init_producer_id,
    CreateTopicsRequest: chain(created_topic_configs, cluster_or(Op.CREATE, topics(Op.CREATE))),
    DeleteTopicsRequest: topics(Op.DELETE, field="topic_names", answers="responses", name=lambda item: item),
    CreatePartitionsRequest: topics(Op.ALTER, answers="results"),
    DescribeConfigsRequest: PerItem("resources", "results", _config_resource(Op.DESCRIBE_CONFIGS)),
    AlterConfigsRequest: PerItem("resources", "responses", _config_resource(Op.ALTER_CONFIGS)),
    IncrementalAlterConfigsRequest: PerItem("resources", "responses", _config_resource(Op.ALTER_CONFIGS)),
    FindCoordinatorRequest: find_coordinator,
    JoinGroupRequest: group(Op.READ),
    SyncGroupRequest: group(Op.READ),
    HeartbeatRequest: group(Op.READ),
    LeaveGroupRequest: group(Op.READ),
    OffsetCommitRequest: chain(group(Op.READ), topics(Op.READ)),
    OffsetFetchRequest: offset_fetch,
    OffsetDeleteRequest: chain(group(Op.DELETE), topics(Op.READ)),
    DescribeGroupsRequest: PerItem("groups", "groups", lambda g: (Op.DESCRIBE, ResourceType.GROUP, g, GROUP_DENIED)),
    ListGroupsRequest: list_groups,
    DeleteGroupsRequest: PerItem("groups", "results", lambda g: (Op.DELETE, ResourceType.GROUP, g, GROUP_DENIED)),
    LeaderAndIsrRequest: cluster(Op.CLUSTER_ACTION),
    StopReplicaRequest: cluster(Op.CLUSTER_ACTION),
    UpdateMetadataRequest: cluster(Op.CLUSTER_ACTION),
    ControlledShutdownRequest: cluster(Op.CLUSTER_ACTION),
    ElectLeadersRequest: cluster(Op.ALTER),
    AlterPartitionReassignmentsRequest: cluster(Op.ALTER),
    ListPartitionReassignmentsRequest: cluster(Op.DESCRIBE),
    DescribeLogDirsRequest: cluster(Op.DESCRIBE),
    DescribeReplicasRequest: cluster(Op.DESCRIBE),
    DescribeAclsRequest: cluster(Op.DESCRIBE),
    CreateAclsRequest: cluster(Op.ALTER),
    DeleteAclsRequest: cluster(Op.ALTER),
}
