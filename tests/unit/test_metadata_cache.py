"""Metadata is answered with the endpoints of the listener the request came in on, as Kafka does."""

from __future__ import annotations

from broker.metadata_cache import MetadataCache
from protocol.errors import ErrorCode
from protocol.messages import LiveBroker, UpdateMetadataEndpoint, UpdateMetadataPartitionState, UpdateMetadataRequest


def broker(broker_id: int, **listeners: tuple[str, int]) -> LiveBroker:
    return LiveBroker(id=broker_id, endpoints=[UpdateMetadataEndpoint(listener=name, host=host, port=port)
                                               for name, (host, port) in listeners.items()])


def partition(number: int, leader: int) -> UpdateMetadataPartitionState:
    return UpdateMetadataPartitionState(topic="events", partition=number, controller_epoch=1, leader=leader,
                                        leader_epoch=0, isr=[1, 2, 3], zk_version=0, replicas=[1, 2, 3],
                                        offline_replicas=[])


def cache() -> MetadataCache:
    metadata = MetadataCache(broker_id=1)
    metadata.update(UpdateMetadataRequest(
        controller_id=1, controller_epoch=1, broker_epoch=-1,
        partition_states=[partition(0, leader=1), partition(1, leader=3), partition(2, leader=4)],
        live_brokers=[broker(1, INTERNAL=("broker-1", 29092), EXTERNAL=("127.0.0.1", 9092)),
                      broker(2, INTERNAL=("broker-2", 29092), EXTERNAL=("127.0.0.1", 9093)),
                      broker(3, INTERNAL=("broker-3", 29092))]))
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
