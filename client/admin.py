"""The admin client: create, delete, grow, list and describe topics, elect leaders, reassign partitions, describe
the replicas every broker hosts and its log dirs, look up offsets by time, delete records; and the consumer groups:
list, describe, delete them, and read, alter and delete their committed offsets."""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from client.closing import AsyncClosing
from client.group.descriptions import GroupDescription, GroupListing, description, listing
from client.group.lookup import find_coordinators
from client.group.offsets import (
    OffsetAndMetadata,
    by_topic,
    commit_errors,
    fetched_group,
    fetched_offsets,
    offset_commit_request,
    offset_fetch_request,
)
from client.metadata import NO_LEADER, ClusterMetadata, PartitionInfo
from protocol.acls import AclBinding, AclBindingFilter
from protocol.apis.acls import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    from_binding,
    from_filter,
    to_binding,
)
from protocol.apis.elections import ElectionType, ElectLeadersRequest, ElectLeadersResponse, TopicPartitions
from protocol.apis.fetch import CONSUMER_REPLICA_ID
from protocol.apis.group_admin import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from protocol.apis.group_offsets import OffsetDeleteRequest, OffsetDeleteResponse
from protocol.apis.groups import Coordinator
from protocol.apis.log_dirs import DescribeLogDirsRequest, DescribeLogDirsResponse, LogDirResult
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from protocol.apis.offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsResponse
from protocol.apis.reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    ListPartitionReassignmentsTopics,
    ReassignablePartition,
    ReassignableTopic,
)
from protocol.apis.records_deletion import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopic,
)
from protocol.apis.replicas import DescribedReplica, DescribeReplicasRequest, DescribeReplicasResponse
from protocol.apis.scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from protocol.apis.shapes import Topic
from protocol.apis.topics import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.sasl import SaslCredentials
from protocol.sasl.scram import SCRAM_BY_WIRE_TYPE, SCRAM_MECHANISMS, new_salt
from protocol.topic_partition import TopicPartition
from transport.connection import BrokerConnection, KafkaConnectionError

log = logging.getLogger(__name__)

T = TypeVar("T")
#: The controller's answers that carry one error code for the whole request.
R = TypeVar("R", ElectLeadersResponse, AlterPartitionReassignmentsResponse, ListPartitionReassignmentsResponse,
            DescribeAclsResponse, CreateAclsResponse, DeleteAclsResponse)
#: Errors after which a group's coordinator is looked for again.
_COORDINATOR_ERRORS = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                                 ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})


class AdminError(Exception):
    """An admin operation failed; `code` is the Kafka error code, the message the broker's explanation."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create: a partition count and replication factor, or explicit replica lists per partition."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: dict[str, str] = field(default_factory=dict)
    assignments: dict[int, list[int]] = field(default_factory=dict)

    def to_wire(self) -> CreatableTopic:
        return CreatableTopic(
            name=self.name,
            num_partitions=self.num_partitions,
            replication_factor=self.replication_factor,
            assignments=[
                CreatableReplicaAssignment(partition=p, broker_ids=list(ids)) for p, ids in self.assignments.items()
            ],
            configs=dict(self.configs),
        )


@dataclass(frozen=True, slots=True)
class ElectionResult:
    """The outcome of a leader election for one partition: NONE (elected), ELECTION_NOT_NEEDED, or why not."""

    topic: str
    partition: int
    error: ErrorCode
    message: str


@dataclass(frozen=True, slots=True)
class Reassignment:
    """A partition reassignment in progress: the replicas assigned now, those being added and removed."""

    replicas: list[int]
    adding: list[int]
    removing: list[int]


def _check_user(user: str, error_code: int, message: str | None) -> None:
    if error_code != ErrorCode.NONE:
        raise AdminError(ErrorCode.from_code(error_code), f"user {user!r}: {message}")


def _monotonic_ms() -> float:
    return time.monotonic() * 1000


class Admin(AsyncClosing):
    """Topic administration against a cluster. CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders and
    the partition reassignments go to the active controller (found through Metadata, re-found on NOT_CONTROLLER);
    DescribeReplicas goes to every live broker."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        request_timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
        client_id: str = "minikafka-admin",
        tls: ssl.SSLContext | None = None,
        clock: Callable[[], float] = _monotonic_ms,
        sasl: SaslCredentials | None = None,
    ) -> None:
        self.retry_backoff_ms = retry_backoff_ms
        self.metadata = ClusterMetadata(bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
                                        tls=tls, sasl=sasl)
        self._clock = clock

    async def create_topics(
        self,
        topics: Sequence[NewTopic],
        *,
        timeout_ms: int = 30000,
        validate_only: bool = False,
        wait_for_leaders: bool = True,
    ) -> None:
        """Create topics through the controller. With wait_for_leaders, return only once every live broker
        reports a leader for every new partition. Raises AdminError (Kafka's error name and the broker's
        message) for the first topic that could not be created, or on timeout."""
        deadline = self._clock() + timeout_ms
        by_name = {topic.name: topic for topic in topics}

        def request(remaining_ms: int, pending: list[str]) -> CreateTopicsRequest:
            return CreateTopicsRequest(topics=[by_name[name].to_wire() for name in pending], timeout_ms=remaining_ms,
                                       validate_only=validate_only)

        responses = await self._on_controller(list(by_name), request, timeout_ms)
        self._raise_first({r.name: (ErrorCode.from_code(r.error_code),
                                    r.error_message or f"cannot create topic {r.name!r}") for r in responses})
        if wait_for_leaders and not validate_only:
            await self._wait_for_leaders([topic.name for topic in topics], deadline)

    async def delete_topics(self, names: Sequence[str], *, timeout_ms: int = 30000) -> None:
        """Delete topics through the controller; return once they are gone. Raises AdminError for the first topic
        that could not be deleted (TOPIC_DELETION_DISABLED, UNKNOWN_TOPIC_OR_PARTITION, REQUEST_TIMED_OUT if it
        is still marked for deletion at the deadline)."""

        def request(remaining_ms: int, pending: list[str]) -> DeleteTopicsRequest:
            return DeleteTopicsRequest(topic_names=pending, timeout_ms=remaining_ms)

        responses = await self._on_controller(list(dict.fromkeys(names)), request, timeout_ms)
        self._raise_first({r.name: (ErrorCode.from_code(r.error_code), r.error_message) for r in responses})

    async def create_partitions(self, counts: Mapping[str, int], *, assignments: Mapping[str, list[list[int]]]
                                | None = None, timeout_ms: int = 30000, validate_only: bool = False) -> None:
        """Grow topics to the given partition counts (new partitions placed by the controller, or by
        `assignments`: one replica list per new partition); return once every live broker knows a leader for
        each. Raises AdminError for the first topic refused."""

        def request(remaining_ms: int, pending: list[str]) -> CreatePartitionsRequest:
            return CreatePartitionsRequest(topics=[CreatePartitionsTopic(
                name=name, count=counts[name],
                assignments=None if name not in (assignments or {}) else [
                    CreatePartitionsAssignment(broker_ids=list(ids)) for ids in (assignments or {})[name]])
                for name in pending], timeout_ms=remaining_ms, validate_only=validate_only)

        deadline = self._clock() + timeout_ms
        responses = await self._on_controller(list(counts), request, timeout_ms)
        self._raise_first({r.name: (ErrorCode.from_code(r.error_code), r.error_message) for r in responses})
        if not validate_only:
            await self._wait_for_leaders(list(counts), deadline, counts)

    async def elect_leaders(self, election_type: ElectionType, partitions: Sequence[tuple[str, int]] | None,
                            *, timeout_ms: int = 30000) -> list[ElectionResult]:
        """Elect leaders through the controller: the preferred replica, or (UNCLEAN) any live replica of a
        partition without a live leader. None means every partition. One result per partition."""
        deadline = self._clock() + timeout_ms
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions or ():
            by_topic.setdefault(topic, []).append(partition)
        request = ElectLeadersRequest(
            election_type=election_type, timeout_ms=timeout_ms,
            topic_partitions=None if partitions is None else [
                TopicPartitions(topic=t, partitions=ps) for t, ps in by_topic.items()])
        response = await self._controller_answer(request, ElectLeadersResponse, deadline, "elect leaders")
        return [ElectionResult(t.topic, p.partition_id, ErrorCode.from_code(p.error_code), p.error_message or "")
                for t in response.replica_election_results for p in t.partition_result]

    async def alter_partition_reassignments(self, targets: Mapping[tuple[str, int], Sequence[int] | None], *,
                                            timeout_ms: int = 30000) -> dict[tuple[str, int], tuple[ErrorCode, str]]:
        """Start, change or cancel (None) partition reassignments through the controller; each partition's
        outcome: NONE, or why not (e.g. NO_REASSIGNMENT_IN_PROGRESS for a cancel)."""
        by_topic: dict[str, list[ReassignablePartition]] = {}
        for (topic, partition), replicas in targets.items():
            by_topic.setdefault(topic, []).append(ReassignablePartition(
                partition_index=partition, replicas=None if replicas is None else list(replicas)))
        request = AlterPartitionReassignmentsRequest(timeout_ms=timeout_ms, topics=[
            ReassignableTopic(name=t, partitions=ps) for t, ps in by_topic.items()])
        response = await self._controller_answer(request, AlterPartitionReassignmentsResponse,
                                                 self._clock() + timeout_ms, "reassign partitions")
        return {(t.name, p.partition_index): (ErrorCode.from_code(p.error_code), p.error_message or "")
                for t in response.responses for p in t.partitions}

    async def list_partition_reassignments(self, partitions: Iterable[tuple[str, int]] | None = None, *,
                                           timeout_ms: int = 30000) -> dict[tuple[str, int], Reassignment]:
        """The reassignments in progress (of `partitions`, or all), from the controller."""
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions or ():
            by_topic.setdefault(topic, []).append(partition)
        request = ListPartitionReassignmentsRequest(timeout_ms=timeout_ms, topics=None if partitions is None else [
            ListPartitionReassignmentsTopics(name=t, partition_indexes=ps) for t, ps in by_topic.items()])
        response = await self._controller_answer(request, ListPartitionReassignmentsResponse,
                                                 self._clock() + timeout_ms, "list partition reassignments")
        return {(t.name, p.partition_index): Reassignment(list(p.replicas), list(p.adding_replicas),
                                                          list(p.removing_replicas))
                for t in response.topics for p in t.partitions}

    async def describe_user_scram_credentials(self, users: Sequence[str] | None = None
                                              ) -> dict[str, list[tuple[str, int]]]:
        """Each user's SCRAM mechanisms and iterations (every user with a credential if `users` is None); raises
        AdminError for a named user without one (RESOURCE_NOT_FOUND)."""
        response = await self._ask_any(DescribeUserScramCredentialsRequest(users=list(users) if users else None),
                                       DescribeUserScramCredentialsResponse)
        if response.error_code != ErrorCode.NONE:
            raise AdminError(ErrorCode.from_code(response.error_code), response.error_message or "")
        described = {}
        for result in response.results:
            _check_user(result.user, result.error_code, result.error_message)
            described[result.user] = [(SCRAM_BY_WIRE_TYPE[c.mechanism].name, c.iterations)
                                      for c in result.credential_infos if c.mechanism in SCRAM_BY_WIRE_TYPE]
        return described

    async def alter_user_scram_credentials(self, upsert: Mapping[tuple[str, str], tuple[str, int]] | None = None,
                                           delete: Iterable[tuple[str, str]] = ()) -> None:
        """Set credentials ({(user, mechanism): (password, iterations)}: the password is salted here, only the salted
        password travels) and delete others ((user, mechanism) pairs); AdminError for a user that failed."""
        upsertions = []
        for (user, name), (password, iterations) in (upsert or {}).items():
            mechanism, salt = SCRAM_MECHANISMS[name], new_salt()
            upsertions.append(ScramCredentialUpsertion(
                name=user, mechanism=mechanism.wire_type, iterations=iterations, salt=salt,
                salted_password=mechanism.salted_password(password, salt, iterations)))
        deletions = [ScramCredentialDeletion(name=user, mechanism=SCRAM_MECHANISMS[name].wire_type)
                     for user, name in delete]
        response = await self._ask_any(AlterUserScramCredentialsRequest(deletions=deletions, upsertions=upsertions),
                                       AlterUserScramCredentialsResponse)
        for result in response.results:
            _check_user(result.user, result.error_code, result.error_message)

    async def list_topics(self) -> list[str]:
        """The names of all topics."""
        await self.metadata.refresh()
        return self.metadata.topics()

    async def describe_topics(self, names: Sequence[str] | None = None) -> list[PartitionInfo]:
        """Every partition of the named topics (all topics if None): leader, leader epoch, replicas and ISR.
        Raises AdminError for a topic that does not exist."""
        await self.metadata.refresh(names)
        for name in names or ():
            error = self.metadata.topic_errors.get(name)
            if error is not None:
                raise AdminError(error, f"topic {name!r}")
        return [info for topic in (names or self.metadata.topics()) for info in self.metadata.partitions(topic) or ()]

    async def describe_replicas(self, names: Sequence[str] | None = None) -> dict[int, list[DescribedReplica]]:
        """The replicas each live broker hosts (of the named topics, or all): role, LEO, HW, log start offset,
        and on leaders each follower's remote LEO. A broker that does not answer is left out."""
        await self.metadata.refresh([])
        broker_ids = sorted(self.metadata.brokers)
        request = DescribeReplicasRequest(topics=None if names is None else list(names))
        described: dict[int, list[DescribedReplica]] = {}
        for broker_id, answer in (await self._ask_each(broker_ids, request)).items():
            if isinstance(answer, DescribeReplicasResponse):
                described[broker_id] = answer.partitions
            else:
                log.warning("broker %d did not describe its replicas: %s", broker_id, answer)
        return described

    async def list_offsets(self, partitions: Iterable[tuple[str, int]], timestamp: int, *,
                           timeout_ms: int = 30000) -> dict[TopicPartition, int]:
        """Each partition's offset for `timestamp` (protocol.apis.offsets' EARLIEST_TIMESTAMP or LATEST_TIMESTAMP,
        or a time in ms: the first offset at or after it, -1 if there is none), asked of its leader; retriable
        errors are retried until timeout_ms. A partition that does not exist is left out."""

        def request(tps: list[TopicPartition]) -> ListOffsetsRequest:
            return ListOffsetsRequest(replica_id=CONSUMER_REPLICA_ID, isolation_level=0, topics=[
                Topic(name=topic, partitions=[ListOffsetsPartition(partition=p, timestamp=timestamp)
                                              for p in numbers]) for topic, numbers in by_topic(tps).items()])

        def results(response: object) -> Iterator[tuple[TopicPartition, ErrorCode, int]]:
            assert isinstance(response, ListOffsetsResponse)
            for topic in response.topics:
                for result in topic.partitions:
                    yield TopicPartition(topic.name, result.partition), ErrorCode.from_code(result.error_code), \
                        result.offset

        outcomes = await self._on_leaders(partitions, request, results, timeout_ms, "list offsets")
        for tp, (error, _) in outcomes.items():
            if error not in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                raise AdminError(error, f"cannot list the offsets of {tp}")
        return {tp: offset for tp, (error, offset) in outcomes.items() if error == ErrorCode.NONE}

    async def delete_records(self, offsets: Mapping[tuple[str, int], int], *, timeout_ms: int = 30000
                             ) -> dict[TopicPartition, tuple[ErrorCode, int]]:
        """Delete each partition's records below its offset (HIGH_WATERMARK: all committed ones), asked of its
        leader; per partition NONE and the new log start offset (low watermark), or the error (-1)."""

        def request(tps: list[TopicPartition]) -> DeleteRecordsRequest:
            return DeleteRecordsRequest(timeout_ms=timeout_ms, topics=[DeleteRecordsTopic(name=topic, partitions=[
                DeleteRecordsPartition(partition_index=p, offset=offsets[(topic, p)]) for p in numbers])
                for topic, numbers in by_topic(tps).items()])

        def results(response: object) -> Iterator[tuple[TopicPartition, ErrorCode, int]]:
            assert isinstance(response, DeleteRecordsResponse)
            for topic in response.topics:
                for result in topic.partitions:
                    yield TopicPartition(topic.name, result.partition_index), \
                        ErrorCode.from_code(result.error_code), result.low_watermark

        return await self._on_leaders(offsets, request, results, timeout_ms, "delete records")

    async def describe_log_dirs(self, broker_ids: Sequence[int] | None = None) -> dict[int, list[LogDirResult]]:
        """Each broker's log dirs (of `broker_ids`, or every live broker) with every replica's size and offset
        lag. AdminError if a broker does not answer."""
        await self.metadata.refresh([])
        asked = sorted(self.metadata.brokers) if broker_ids is None else list(broker_ids)
        unknown = sorted(set(asked) - set(self.metadata.brokers))
        if unknown:
            raise AdminError(ErrorCode.BROKER_NOT_AVAILABLE, f"no live broker {', '.join(map(str, unknown))}")
        described = {}
        for broker_id, answer in (await self._ask_each(asked, DescribeLogDirsRequest(topics=None))).items():
            if not isinstance(answer, DescribeLogDirsResponse):
                raise AdminError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id}: {answer}")
            if answer.error_code != ErrorCode.NONE:
                raise AdminError(ErrorCode.from_code(answer.error_code), f"broker {broker_id}")
            described[broker_id] = answer.results
        return described

    # ----------------------------------------------------------------------------------- ACLs

    async def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The bindings the filter matches; AdminError if they cannot be described."""
        answer = await self._ask_any(DescribeAclsRequest(filter=from_filter(acl_filter)), DescribeAclsResponse)
        if answer.error_code != ErrorCode.NONE:
            raise AdminError(ErrorCode.from_code(answer.error_code), answer.error_message or "cannot describe ACLs")
        return [to_binding(d) for d in answer.acls]

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[tuple[ErrorCode, str | None]]:
        """Add the bindings: each one's outcome, in order."""
        answer = await self._ask_any(CreateAclsRequest(creations=[from_binding(b) for b in bindings]),
                                     CreateAclsResponse)
        return [(ErrorCode.from_code(r.error_code), r.error_message) for r in answer.results]

    async def delete_acls(self, filters: Sequence[AclBindingFilter]
                          ) -> list[tuple[ErrorCode, str | None, list[AclBinding]]]:
        """Delete the bindings each filter matches: each filter's outcome and the bindings it deleted, in order."""
        answer = await self._ask_any(DeleteAclsRequest(filters=[from_filter(f) for f in filters]), DeleteAclsResponse)
        return [(ErrorCode.from_code(r.error_code), r.error_message, [to_binding(d) for d in r.matching_acls])
                for r in answer.filter_results]

    async def _ask_any(self, request: object, answer: type[R]) -> R:
        """The answer of a live broker (the lowest id: ACLs and users' credentials are the same on each)."""
        await self.metadata.refresh([])
        if not self.metadata.brokers:
            raise AdminError(ErrorCode.BROKER_NOT_AVAILABLE, "no live broker")
        response = await self._ask(min(self.metadata.brokers), request)
        if not isinstance(response, answer):
            raise AdminError(ErrorCode.UNKNOWN_SERVER_ERROR, f"unexpected answer {response!r}")
        return response

    # ----------------------------------------------------------------------------------- consumer groups

    async def list_groups(self, states: Sequence[str] = (), *, timeout_ms: int = 30000) -> list[GroupListing]:
        """The groups of every broker (each holds those it coordinates), in one of `states` if given (Kafka's
        state names, any case), by group id."""
        deadline = self._clock() + timeout_ms
        await self.metadata.refresh([])
        pending, found = sorted(self.metadata.brokers), []
        while pending:
            problem = ""
            for broker_id in list(pending):
                try:
                    response = await self._ask(broker_id, ListGroupsRequest(states=list(states)))
                except (KafkaConnectionError, KafkaError) as e:
                    problem = f"broker {broker_id}: {e}"
                    continue
                assert isinstance(response, ListGroupsResponse)
                error = ErrorCode.from_code(response.error_code)
                if error == ErrorCode.NONE:
                    found += [listing(group, broker_id) for group in response.groups]
                    pending.remove(broker_id)
                elif error.retriable:
                    problem = f"broker {broker_id}: {error.name}"
                else:
                    raise AdminError(error, f"broker {broker_id} did not list its groups")
            if pending:
                await self._backoff(deadline, f"cannot list the groups: {problem}")
        return sorted(found, key=lambda g: g.group_id)

    async def describe_groups(self, group_ids: Sequence[str], *, timeout_ms: int = 30000
                              ) -> dict[str, GroupDescription]:
        """Each group's state, protocol, members and their assignments, from its coordinator. A group the
        coordinator does not hold is described as "Dead" without members."""

        async def describe(connection: BrokerConnection, coordinator: Coordinator, groups: list[str]
                           ) -> dict[str, tuple[ErrorCode, GroupDescription]]:
            response: DescribeGroupsResponse = await connection.request(DescribeGroupsRequest(groups=groups))
            return {g.group_id: (ErrorCode.from_code(g.error_code), description(g, coordinator))
                    for g in response.groups}

        return self._raise_group_errors(await self._on_coordinators(group_ids, describe, timeout_ms), "describe")

    async def delete_groups(self, group_ids: Sequence[str], *, timeout_ms: int = 30000) -> dict[str, ErrorCode]:
        """Delete groups (empty ones only) with their committed offsets: each group's outcome, NONE when deleted
        (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND ... otherwise)."""

        async def delete(connection: BrokerConnection, _coordinator: Coordinator, groups: list[str]
                         ) -> dict[str, tuple[ErrorCode, None]]:
            response: DeleteGroupsResponse = await connection.request(DeleteGroupsRequest(groups=groups))
            return {r.group_id: (ErrorCode.from_code(r.error_code), None) for r in response.results}

        return {group: error for group, (error, _) in (await self._on_coordinators(group_ids, delete,
                                                                                   timeout_ms)).items()}

    async def list_group_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]] | None = None, *,
                                 timeout_ms: int = 30000) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets: of `partitions` (those without a committed offset left out), or of every
        partition it has committed. Raises AdminError for the group's error or a partition's."""
        wanted = None if partitions is None else [TopicPartition(*tp) for tp in partitions]

        async def fetch(connection: BrokerConnection, _coordinator: Coordinator, groups: list[str]
                        ) -> dict[str, tuple[ErrorCode, dict[TopicPartition, OffsetAndMetadata]]]:
            response = await connection.request(offset_fetch_request(group_id, wanted))
            try:
                offsets, errors = fetched_offsets(fetched_group(response, group_id))
            except KafkaError as e:
                return {group_id: (e.code, {})}
            if errors:
                tp, error = min(errors.items())
                raise AdminError(error, f"cannot read the committed offset of {tp}")
            return {group_id: (ErrorCode.NONE, {tp: o for tp, o in offsets.items() if o is not None})}

        return self._raise_group_errors(await self._on_coordinators([group_id], fetch, timeout_ms),
                                        "read the offsets of")[group_id]

    async def alter_group_offsets(self, group_id: str, offsets: Mapping[tuple[str, int], int | OffsetAndMetadata],
                                  *, timeout_ms: int = 30000) -> None:
        """Commit offsets for a group from outside it (an empty group: a group with members refuses them with
        UNKNOWN_MEMBER_ID). Raises AdminError for the first partition refused."""
        committed = {TopicPartition(*tp): o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
                     for tp, o in offsets.items()}

        async def commit(connection: BrokerConnection, _coordinator: Coordinator, groups: list[str]
                         ) -> dict[str, tuple[ErrorCode, dict[TopicPartition, ErrorCode]]]:
            errors = commit_errors(await connection.request(offset_commit_request(group_id, committed)))
            failed = sorted((tp, e) for tp, e in errors.items() if e != ErrorCode.NONE)
            return {group_id: (failed[0][1] if failed else ErrorCode.NONE, errors)}

        self._raise_group_errors(await self._on_coordinators([group_id], commit, timeout_ms), "alter the offsets of")

    async def delete_group_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]], *,
                                   timeout_ms: int = 30000) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """Delete a group's committed offsets of `partitions` (OffsetDelete): the group's error (NONE,
        GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP ...) and each partition's (GROUP_SUBSCRIBED_TO_TOPIC for a topic its
        members consume)."""
        wanted = [TopicPartition(*tp) for tp in partitions]
        request = OffsetDeleteRequest(group_id=group_id, topics=[
            Topic(name=topic, partitions=numbers) for topic, numbers in by_topic(wanted).items()])

        async def delete(connection: BrokerConnection, _coordinator: Coordinator, groups: list[str]
                         ) -> dict[str, tuple[ErrorCode, dict[TopicPartition, ErrorCode]]]:
            response: OffsetDeleteResponse = await connection.request(request)
            return {group_id: (ErrorCode.from_code(response.error_code), commit_errors(response))}

        error, errors = (await self._on_coordinators([group_id], delete, timeout_ms))[group_id]
        return error, errors

    async def close(self) -> None:
        """Close the connections."""
        await self.metadata.close()

    async def _on_coordinators(
        self, group_ids: Sequence[str],
        call: Callable[[BrokerConnection, Coordinator, list[str]], Awaitable[dict[str, tuple[ErrorCode, T]]]],
        timeout_ms: int,
    ) -> dict[str, tuple[ErrorCode, T]]:
        """Run `call` on each group's coordinator with the groups it coordinates; a group answered with a
        coordinator error (the coordinator moved, or is loading) is tried again, its coordinator looked for again,
        until timeout_ms. Each group's error and result."""
        deadline = self._clock() + timeout_ms
        pending, outcomes = list(dict.fromkeys(group_ids)), {}
        while pending:
            problem = ""
            try:
                coordinators = await find_coordinators(self.metadata, pending)
            except KafkaConnectionError as e:
                coordinators, problem = {}, str(e)
            by_coordinator: dict[tuple[str, int], list[str]] = defaultdict(list)
            for group in pending:
                coordinator = coordinators.get(group)
                error = ErrorCode.COORDINATOR_NOT_AVAILABLE if coordinator is None else ErrorCode.from_code(
                    coordinator.error_code)
                if error == ErrorCode.NONE:
                    by_coordinator[(coordinator.host, coordinator.port)].append(group)
                elif error.retriable:
                    problem = f"no coordinator for group {group!r} yet ({error.name})"
                else:
                    raise AdminError(error, f"cannot find the coordinator of group {group!r}")
            for (host, port), groups in by_coordinator.items():
                try:
                    connection = await self.metadata.connection_to(host, port)
                    answers = await call(connection, coordinators[groups[0]], groups)
                except (KafkaConnectionError, KafkaError) as e:
                    problem = f"coordinator {host}:{port}: {e}"
                    continue
                for group, (error, result) in answers.items():
                    if error in _COORDINATOR_ERRORS:
                        problem = f"group {group!r}: {error.name}"
                    elif group in pending:
                        pending.remove(group)
                        outcomes[group] = (error, result)
            if pending:
                await self._backoff(deadline, f"no answer for group {', '.join(map(repr, pending))}: {problem}")
        return outcomes

    @staticmethod
    def _raise_group_errors(outcomes: Mapping[str, tuple[ErrorCode, T]], what: str) -> dict[str, T]:
        for group, (error, _) in outcomes.items():
            if error != ErrorCode.NONE:
                raise AdminError(error, f"cannot {what} group {group!r}")
        return {group: result for group, (_, result) in outcomes.items()}

    async def _ask(self, broker_id: int, request: object) -> object:
        connection = await self.metadata.connection(broker_id)
        return await connection.request(request)

    async def _ask_each(self, broker_ids: list[int], request: object) -> dict[int, object]:
        """Each broker's answer to the request, or the exception it raised."""
        answers = await asyncio.gather(*(self._ask(b, request) for b in broker_ids), return_exceptions=True)
        return dict(zip(broker_ids, answers, strict=True))

    async def _on_leaders(self, partitions: Iterable[tuple[str, int]],
                          request: Callable[[list[TopicPartition]], object],
                          results: Callable[[object], Iterable[tuple[TopicPartition, ErrorCode, T]]],
                          timeout_ms: int, what: str) -> dict[TopicPartition, tuple[ErrorCode, T | int]]:
        """Ask each partition's leader (the partitions it leads in one request) until every partition has an
        answer other than a retriable error, until timeout_ms; a partition that does not exist is
        UNKNOWN_TOPIC_OR_PARTITION (-1). Per partition the error and the value `results` gives with it."""
        deadline = self._clock() + timeout_ms
        pending = {TopicPartition(*tp) for tp in partitions}
        found: dict[TopicPartition, tuple[ErrorCode, T | int]] = {}
        while pending:
            problem = "no leader known"
            await self.metadata.refresh(sorted({tp.topic for tp in pending}))
            by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
            for tp in sorted(pending):
                info = self.metadata.leader_for(*tp)
                count = self.metadata.partition_count(tp.topic)
                if self.metadata.topic_errors.get(tp.topic) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION or (
                        count and tp.partition >= count):
                    found[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
                    pending.discard(tp)
                elif info is not None:
                    by_leader[info.leader].append(tp)
            for leader, tps in by_leader.items():
                try:
                    response = await self._ask(leader, request(tps))
                except (KafkaConnectionError, KafkaError) as e:
                    problem = str(e)
                    continue
                for tp, error, value in results(response):
                    if error.retriable:
                        problem = f"{error.name} from broker {leader} for {tp}"
                    elif tp in pending:
                        found[tp] = (error, value)
                        pending.discard(tp)
            if pending:
                await self._backoff(deadline, f"cannot {what}: {problem}")
        return found

    async def _ask_controller(self, request: object) -> object:
        await self.metadata.refresh([])
        controller = self.metadata.controller_id
        if controller not in self.metadata.brokers:
            raise KafkaConnectionError(f"no live controller (controller id {controller})")
        return await self._ask(controller, request)

    async def _controller_answer(self, request: object, answer: type[R], deadline: float, what: str) -> R:
        """The controller's answer to a request whose response carries one error code: asked again (the
        controller found again) while it is NOT_CONTROLLER; AdminError for any other error."""
        while True:
            problem = "no controller"
            try:
                response = await self._ask_controller(request)
            except (KafkaConnectionError, KafkaError) as e:
                problem = str(e)
            else:
                assert isinstance(response, answer)
                error = ErrorCode.from_code(response.error_code)
                if error == ErrorCode.NONE:
                    return response
                if error != ErrorCode.NOT_CONTROLLER:
                    raise AdminError(error, f"cannot {what}")
                problem = f"broker {self.metadata.controller_id} is not the controller"
            await self._backoff(deadline, f"cannot {what}: {problem}")

    async def _on_controller(self, names: list[str], request: Callable[[int, list[str]], object],
                             timeout_ms: int) -> list[Any]:
        """Send a per-topic request to the controller until every topic has an answer other than
        NOT_CONTROLLER (finding the controller again meanwhile); the per-topic results."""
        deadline = self._clock() + timeout_ms
        pending, answered, problem = list(names), [], "no controller"
        while pending:
            try:
                response = await self._ask_controller(request(max(0, int(deadline - self._clock())), pending))
            except KafkaError as e:
                if not e.retriable:
                    raise AdminError(e.code, e.message or "refused") from None
                problem = str(e)
            except KafkaConnectionError as e:
                problem = str(e)
            else:
                assert isinstance(response, CreateTopicsResponse | DeleteTopicsResponse | CreatePartitionsResponse)
                results = response.responses if isinstance(response, DeleteTopicsResponse) else (
                    response.topics if isinstance(response, CreateTopicsResponse) else response.results)
                for result in results:
                    if ErrorCode.from_code(result.error_code) == ErrorCode.NOT_CONTROLLER:
                        problem = result.error_message or "not the controller"
                    elif result.name in pending:
                        pending.remove(result.name)
                        answered.append(result)
            if pending:
                await self._backoff(deadline, f"no answer for {', '.join(pending)}: {problem}")
        return answered

    @staticmethod
    def _raise_first(outcomes: Mapping[str, tuple[ErrorCode, str | None]]) -> None:
        failures = [(code, message or name) for name, (code, message) in outcomes.items() if code != ErrorCode.NONE]
        if failures:
            raise AdminError(failures[0][0], "; ".join(message for _, message in failures))

    async def _wait_for_leaders(self, names: list[str], deadline: float,
                                counts: Mapping[str, int] | None = None) -> None:
        """Poll every live broker's metadata until all partitions of `names` (at least `counts` of them) have a
        leader."""
        while True:
            lagging = await self._brokers_without_leaders(names, counts or {})
            if not lagging:
                return
            await self._backoff(deadline, f"created {', '.join(names)}, but {lagging} reports no leader for them yet")

    async def _brokers_without_leaders(self, names: list[str], counts: Mapping[str, int]) -> str:
        """Which broker lacks a leader for some partition of `names`, or knows fewer partitions than `counts`
        ('' if none), per its metadata cache."""
        await self.metadata.refresh([])
        request = MetadataRequest(topics=names)
        for broker_id in sorted(self.metadata.brokers):
            try:
                response = await self._ask(broker_id, request)
            except (KafkaConnectionError, KafkaError) as e:
                return f"broker {broker_id} ({e})"
            assert isinstance(response, MetadataResponse)
            for topic in response.topics:
                if topic.error_code or not topic.partitions or any(p.leader == NO_LEADER for p in topic.partitions):
                    return f"broker {broker_id}"
                if len(topic.partitions) < counts.get(topic.name, 0):
                    return f"broker {broker_id}"
        return ""

    async def _backoff(self, deadline: float, problem: str) -> None:
        """Sleep retry_backoff_ms, or raise AdminError(REQUEST_TIMED_OUT) if that passes the deadline."""
        if self._clock() + self.retry_backoff_ms > deadline:
            raise AdminError(ErrorCode.REQUEST_TIMED_OUT, problem)
        await asyncio.sleep(self.retry_backoff_ms / 1000)
