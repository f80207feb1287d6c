"""The controller's writes for topics whose operations do not fit in one ZooKeeper request, against a real ZooKeeper
(brokers stood in for by the fake network of test_controller): creating and deleting such a topic, and deleting many
ISR change notifications, go in fenced transactions each under the request budget; a creation or a deletion that a
controller left half-way is completed by the next one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from protocol.apis.replica_control import LeaderAndIsrRequest, StopReplicaRequest
from protocol.apis.topics import DeleteTopicsRequest
from protocol.errors import ErrorCode
from tests.integration.controllerutil import Cluster, assigned, create, no_children, until
from zk import znodes
from zk.client import CreateOp, ZkClient
from zk.ops import Op, multi_bytes
from zk.znodes import LeaderIsrAndControllerEpoch, PendingDeletion, TopicAssignment

if TYPE_CHECKING:
    from tests.integration.conftest import ZkSessionFactory

BUDGET = 4096  # bytes a request may take: a topic of 60 partitions needs about 17 KB in one transaction


@pytest.fixture
def request_sizes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The size of every transaction any ZkClient sends during the test."""
    sizes: list[int] = []
    send = ZkClient._commit

    def recording(self: ZkClient, ops: list[Op]) -> object:
        sizes.append(multi_bytes(ops, self.chroot))
        return send(self, ops)

    monkeypatch.setattr(ZkClient, "_commit", recording)
    yield sizes


def spread(partitions: int, brokers: tuple[int, ...] = (1, 2, 3)) -> dict[int, list[int]]:
    """Partition p on every broker, led by the p-th in turn."""
    return {p: [brokers[(p + i) % len(brokers)] for i in range(len(brokers))] for p in range(partitions)}


async def partitions_with_state(cluster: Cluster, topic: str) -> list[int]:
    path = znodes.topic_partitions_path(topic)
    found = []
    for child in await cluster.observer.get_children(path) if await cluster.observer.exists(path) else []:
        if await cluster.observer.exists(znodes.partition_state_path(topic, int(child))) is not None:
            found.append(int(child))
    return sorted(found)


async def write_partly(observer: ZkClient, topic: str, assignment: dict[int, list[int]], *,
                       with_state: list[int], znode_only: list[int]) -> str:
    """A topic's znode, some of its partitions' znodes with a first state, some without; returns its topic id."""
    topic_id = znodes.new_topic_id()
    await observer.ensure_path(znodes.TOPICS_PATH)
    await observer.create(znodes.topic_path(topic), znodes.encode_topic_znode(TopicAssignment(assignment,
                                                                                                topic_id=topic_id)))
    for p in with_state:
        state = LeaderIsrAndControllerEpoch(leader=assignment[p][0], leader_epoch=0, isr=tuple(assignment[p]),
                                            controller_epoch=1)
        await observer.create(znodes.partition_state_path(topic, p), znodes.encode_partition_state(state),
                              makepath=True)
    for p in znode_only:
        await observer.create(znodes.topic_partition_path(topic, p), makepath=True)
    return topic_id


async def test_a_topic_over_the_request_budget_is_created_and_deleted_in_requests_under_it(
    zk_session: ZkSessionFactory, request_sizes: list[int]
):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3, max_request_bytes=BUDGET)
        active = await cluster.active_controller()
        assignment = spread(60)
        request_sizes.clear()
        await create(active, assigned("big", assignment))

        assert await partitions_with_state(cluster, "big") == list(range(60))
        assert max(request_sizes) <= BUDGET
        assert len(request_sizes) >= 4
        new = {(s.partition, s.leader) for r in cluster.network.requests(LeaderAndIsrRequest)
               for s in r.partition_states if s.topic == "big" and s.is_new}
        assert new == {(p, replicas[0]) for p, replicas in assignment.items()}

        request_sizes.clear()
        response = await active.controller.delete_topics(DeleteTopicsRequest(topic_names=["big"], timeout_ms=5000))
        assert [(r.name, r.error_code) for r in response.responses] == [("big", ErrorCode.NONE)]
        assert await cluster.observer.get_children(znodes.TOPICS_PATH) == []
        assert await cluster.observer.get_children(znodes.DELETE_TOPICS_PATH) == []
        assert max(request_sizes) <= BUDGET
        assert len(request_sizes) >= 4

        await create(active, assigned("big", spread(3)))  # the name is free again
        assert await partitions_with_state(cluster, "big") == [0, 1, 2]


async def test_many_isr_change_notifications_are_deleted_in_requests_under_the_budget(
    zk_session: ZkSessionFactory, request_sizes: list[int]
):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, max_request_bytes=BUDGET)
        await create(await cluster.active_controller(), assigned("t", spread(3, brokers=(1,))))
        await cluster.stop(1)
        # 200 notifications written while there is no controller: the next one finds them all at once.
        notifications = [CreateOp(znodes.isr_change_sequence_path(), znodes.encode_isr_change([("t", p % 3)]),
                                  sequence=True) for p in range(200)]
        for start in range(0, len(notifications), 20):
            await cluster.observer.multi(notifications[start:start + 20])
        request_sizes.clear()

        await cluster.start(1, max_request_bytes=BUDGET)
        assert await until(no_children(cluster.observer, znodes.ISR_CHANGE_NOTIFICATION_PATH),
                           "every ISR change notification to be deleted")
        assert max(request_sizes) <= BUDGET
        assert len(request_sizes) >= 4  # 200 deletes take about 15 KB


async def test_a_topic_creation_cut_half_way_is_completed_by_the_next_controller(zk_session: ZkSessionFactory):
    """What a controller failing between the transactions of a creation leaves: the topic's znode, some partitions
    with a state, one with its znode but no state, others with neither. They are New, initialised at failover."""
    async with Cluster(zk_session) as cluster:
        assignment = spread(6)
        await write_partly(cluster.observer, "half", assignment, with_state=[0, 1, 2], znode_only=[3])

        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()

        async def initialized() -> bool:
            return await partitions_with_state(cluster, "half") == list(range(6))

        await until(initialized, "every partition of half to have a state")
        for p in (3, 4, 5):  # their first state: leader the first live replica, ISR the live replicas
            state = await cluster.state("half", p)
            assert state.leader_epoch == 0 and state.leader == state.isr[0] and set(state.isr) <= set(assignment[p])
        new = {s.partition for r in cluster.network.requests(LeaderAndIsrRequest)
               for s in r.partition_states if s.topic == "half" and s.is_new}
        assert new == {3, 4, 5}
        assert active.controller.context.states.keys() >= {("half", p) for p in range(6)}


async def test_a_topic_deletion_cut_half_way_is_finished_by_the_next_controller(zk_session: ZkSessionFactory):
    """What a controller failing between the transactions of a deletion leaves: the topic queued for deletion, its
    znode and config, some partitions with neither state nor znode, one with its znode only. The next controller
    deletes every replica (those of the partitions without a state too), records those on the broker that is down
    as pending deletions, and removes what is left."""
    async with Cluster(zk_session) as cluster:
        observer = cluster.observer
        assignment = spread(6)
        topic_id = await write_partly(observer, "gone", assignment, with_state=[3, 4, 5], znode_only=[2])
        await observer.create(znodes.topic_config_path("gone"), znodes.encode_topic_config({}), makepath=True)
        await observer.create(znodes.delete_topic_path("gone"), makepath=True)

        await cluster.start(1, 2)  # broker 3 is down
        await cluster.active_controller()

        async def gone() -> bool:
            return await observer.exists(znodes.topic_path("gone")) is None

        await until(gone, "topic gone to be deleted")
        for path in (znodes.topic_partitions_path("gone"), znodes.topic_config_path("gone"),
                     znodes.delete_topic_path("gone")):
            assert await observer.exists(path) is None, path
        deleted = {(r_to, s.partition) for r_to in (1, 2) for r in cluster.network.requests(StopReplicaRequest, to=r_to)
                   for s in r.partitions if s.topic == "gone" and s.delete_partition}
        assert deleted == {(b, p) for b in (1, 2) for p in range(6)}
        pending = znodes.decode_pending_deletions((await observer.get(znodes.pending_replica_deletions_path(3)))[0])
        assert sorted(pending) == [PendingDeletion("gone", p, topic_id) for p in range(6)]
