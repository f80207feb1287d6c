"""Metadata is answered with the endpoints of the listener the request came in on, as Kafka does."""

from __future__ import annotations

from broker.metadata_cache import MetadataCache
from protocol.apis.replica_control import (
    LiveBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from protocol.errors import ErrorCode


def broker(broker_id: int, **listeners: tuple[str, int]) -> LiveBroker:
    return LiveBroker(id=broker_id, endpoints=[UpdateMetadataEndpoint(listener=name, host=host, port=port)
                                               for name, (host, port) in listeners.items()])


def partition(number: int, leader: int) -> UpdateMetadataPartitionState:
    return UpdateMetadataPartitionState(topic="events", partition=number, controller_epoch=1, leader=leader,
                                        leader_epoch=0, isr=[1, 2, 3], zk_version=0, replicas=[1, 2, 3],
                                        offline_replicas=[])


BROKERS = {1: broker(1, INTERNAL=("broker-1", 29092), EXTERNAL=("127.0.0.1", 9092)),
           2: broker(2, INTERNAL=("broker-2", 29092), EXTERNAL=("127.0.0.1", 9093)),
           3: broker(3, INTERNAL=("broker-3", 29092))}


def cache() -> MetadataCache:
    metadata = MetadataCache(broker_id=1)
    metadata.update(UpdateMetadataRequest(
        controller_id=1, controller_epoch=1, broker_epoch=-1,
        partition_states=[partition(0, leader=1), partition(1, leader=3), partition(2, leader=4)],
        live_brokers=list(BROKERS.values())))
    return metadata


def test_brokers_are_given_with_their_endpoints_on_the_request_listener():
    metadata = cache()
    external = metadata.metadata(None, "EXTERNAL")
    assert [(b.node_id, b.host, b.port) for b in external.brokers] == [(1, "127.0.0.1", 9092), (2, "127.0.0.1", 9093)]
    internal = metadata.metadata(None, "INTERNAL")
    assert [(b.node_id, b.host, b.port) for b in internal.brokers] == [
        (1, "broker-1", 29092), (2, "broker-2", 29092), (3, "broker-3", 29092)]
    assert metadata.metadata(None, "OTHER").brokers == []
    assert metadata.endpoint(2, "EXTERNAL") == ("127.0.0.1", 9093)
    assert metadata.endpoint(3, "EXTERNAL") is None and metadata.endpoint(9, "INTERNAL") is None


def test_a_leader_without_the_listener_is_listener_not_found_and_a_dead_one_leader_not_available():
    [topic] = cache().metadata(["events"], "EXTERNAL").topics
    answers = {p.partition: (ErrorCode.from_code(p.error_code), p.leader) for p in topic.partitions}
    assert answers == {0: (ErrorCode.NONE, 1), 1: (ErrorCode.LISTENER_NOT_FOUND, -1),
                       2: (ErrorCode.LEADER_NOT_AVAILABLE, -1)}
    [topic] = cache().metadata(["events"], "INTERNAL").topics
    assert [p.leader for p in topic.partitions] == [1, 3, -1]


def test_a_topics_answer_is_kept_until_an_update_changes_the_topic_or_the_live_brokers():
    metadata = cache()
    [first] = metadata.metadata(None, "INTERNAL").topics
    assert metadata.metadata(["events"], "INTERNAL").topics[0] is first  # built once
    assert metadata.metadata(["events"], "EXTERNAL").topics[0] is not first  # per listener

    def update(*states: UpdateMetadataPartitionState, live: tuple[int, ...] = (1, 2, 3)) -> list[tuple[int, int]]:
        metadata.update(UpdateMetadataRequest(
            controller_id=1, controller_epoch=1, broker_epoch=-1, partition_states=list(states),
            live_brokers=[BROKERS[b] for b in live]))
        [topic] = metadata.metadata(None, "INTERNAL").topics
        return [(p.partition, p.leader) for p in topic.partitions]

    assert update() == [(0, 1), (1, 3), (2, -1)]  # same brokers, no partition: the answer is kept
    assert metadata.metadata(None, "INTERNAL").topics[0] is first
    assert update(partition(2, leader=2)) == [(0, 1), (1, 3), (2, 2)]  # the topic changed
    assert update(live=(1, 2)) == [(0, 1), (1, -1), (2, 2)]  # broker 3 is gone
    deleted = UpdateMetadataPartitionState(topic="events", partition=1, controller_epoch=1, leader=-2,
                                           leader_epoch=0, isr=[], zk_version=0, replicas=[], offline_replicas=[])
    assert update(deleted, live=(1, 2)) == [(0, 1), (2, 2)]
