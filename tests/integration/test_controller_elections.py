"""Preferred replica elections in the KafkaController against a real ZooKeeper, with the stand-in brokers of
test_controller_failover (they never fetch, so the ISR changes only when the test writes it as a leader would):
the preferred replica leads again only once it is live and in the ISR, through ElectLeaders or through the
/admin/preferred_replica_election znode of seed 001."""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.apis.elections import ElectionType, ElectLeadersRequest, TopicPartitions
from protocol.errors import ErrorCode
from tests.integration.controllerutil import Cluster, assigned, create, until
from zk import znodes

if TYPE_CHECKING:
    from tests.integration.conftest import ZkSessionFactory


def preferred(topic: str, partition: int) -> ElectLeadersRequest:
    return ElectLeadersRequest(election_type=ElectionType.PREFERRED, timeout_ms=5000,
                               topic_partitions=[TopicPartitions(topic=topic, partitions=[partition])])


async def test_the_preferred_replica_leads_again_only_once_live_and_in_the_isr(zk_session: ZkSessionFactory):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        assert active.id != 3
        await create(active, assigned("t", {0: [3, 1, 2]}))
        await cluster.stop(3)
        await until(lambda: cluster.leader_and_isr(1, "t", 0)[-1][:3] == (1, 1, [1, 2]), "broker 1 to lead t-0")
        response = await active.controller.elect_leaders(preferred("t", 0))
        [[dead]] = [[(p.error_code, p.error_message) for p in r.partition_result]
                    for r in response.replica_election_results]
        assert dead == (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "preferred replica 3 is not live")

        await cluster.start(3)
        await cluster.active_controller()
        response = await active.controller.elect_leaders(preferred("t", 0))
        [[result]] = [r.partition_result for r in response.replica_election_results]
        assert (result.error_code, result.error_message) == (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                                                             "preferred replica 3 is not in the ISR [1, 2]")
        state = await cluster.state("t", 0)
        assert (state.leader, state.leader_epoch) == (1, 1)

        await cluster.leader_changes_isr("t", 0, [1, 2, 3])
        cluster.network.sent.clear()
        response = await active.controller.elect_leaders(preferred("t", 0))
        [[result]] = [r.partition_result for r in response.replica_election_results]
        assert (result.error_code, result.error_message) == (ErrorCode.NONE, "preferred replica 3 elected")
        state = await cluster.state("t", 0)
        assert (state.leader, state.leader_epoch, state.isr) == (3, 2, (1, 2, 3))
        for broker in (1, 2, 3):
            assert cluster.leader_and_isr(broker, "t", 0) == [(3, 2, [1, 2, 3], active.controller.epoch)]
        response = await active.controller.elect_leaders(preferred("t", 0))
        assert response.replica_election_results[0].partition_result[0].error_code == ErrorCode.ELECTION_NOT_NEEDED


async def test_the_preferred_replica_election_znode_of_seed_001(zk_session: ZkSessionFactory):
    async with Cluster(zk_session) as cluster:
        await cluster.start(1, 2, 3)
        active = await cluster.active_controller()
        await create(active, assigned("t", {0: [3, 1, 2], 1: [2, 3, 1]}))
        await cluster.stop(3)
        await until(lambda: cluster.leader_and_isr(1, "t", 0)[-1][0] == 1, "broker 1 to lead t-0")
        await cluster.start(3)
        await cluster.active_controller()
        await cluster.leader_changes_isr("t", 0, [1, 2, 3])
        await cluster.observer.create(znodes.PREFERRED_REPLICA_ELECTION_PATH,
                                      znodes.encode_partition_list([("t", 0), ("t", 1), ("gone", 0)]))

        async def done() -> bool:
            return await cluster.observer.exists(znodes.PREFERRED_REPLICA_ELECTION_PATH) is None

        await until(done, "the controller to process and remove /admin/preferred_replica_election")
        assert (await cluster.state("t", 0)).leader == 3
        assert (await cluster.state("t", 1)).leader == 2  # led by its preferred replica already
