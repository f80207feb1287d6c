"""Znode paths and contents round-trip, against JSON literals in Apache Kafka's formats (ZkData.scala)."""

import json

import pytest

from protocol.endpoint import EndPoint
from zk import znodes
from zk.znodes import BrokerInfo, LeaderIsrAndControllerEpoch, ZkDataError


def test_paths_follow_kafkas_layout():
    assert znodes.broker_path(3) == "/brokers/ids/3"
    assert znodes.topic_path("events") == "/brokers/topics/events"
    assert znodes.topic_partitions_path("events") == "/brokers/topics/events/partitions"
    assert znodes.partition_state_path("events", 7) == "/brokers/topics/events/partitions/7/state"
    assert znodes.topic_config_path("events") == "/config/topics/events"
    assert znodes.isr_change_sequence_path() == "/isr_change_notification/isr_change_"
    assert znodes.CONTROLLER_PATH == "/controller"
    assert znodes.CONTROLLER_EPOCH_PATH == "/controller_epoch"


PLAINTEXT_9092 = EndPoint("PLAINTEXT", "127.0.0.1", 9092)


def test_broker_registration_is_kafkas_version_5():
    data = znodes.encode_broker([PLAINTEXT_9092], 1707276552023)
    assert json.loads(data) == {
        "version": 5,
        "host": "127.0.0.1",
        "port": 9092,
        "endpoints": ["PLAINTEXT://127.0.0.1:9092"],
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "jmx_port": -1,
        "timestamp": "1707276552023",
        "features": {},
    }
    assert b" " not in data  # compact, as Jackson writes it
    assert znodes.decode_broker(1, data, epoch=42) == BrokerInfo(1, "127.0.0.1", 9092, epoch=42,
                                                                 endpoints=(PLAINTEXT_9092,))
    assert json.loads(znodes.encode_broker([EndPoint("PLAINTEXT", "h", 1)], 0, rack="r1"))["rack"] == "r1"


def test_a_registration_holds_every_advertised_listener_and_is_read_for_the_inter_broker_one():
    internal, external = EndPoint("INTERNAL", "broker-1", 29092), EndPoint("EXTERNAL", "127.0.0.1", 9092)
    data = znodes.encode_broker([internal, external], 0)
    value = json.loads(data)
    assert value["endpoints"] == ["INTERNAL://broker-1:29092", "EXTERNAL://127.0.0.1:9092"]
    assert value["listener_security_protocol_map"] == {"INTERNAL": "PLAINTEXT", "EXTERNAL": "PLAINTEXT"}
    assert (value["host"], value["port"]) == ("broker-1", 29092)  # the first PLAINTEXT endpoint, as Kafka
    for name, endpoint in (("INTERNAL", internal), ("EXTERNAL", external)):
        info = znodes.decode_broker(1, data, listener_name=name)
        assert (info.host, info.port, info.endpoints) == (endpoint.host, endpoint.port, (internal, external))
    with pytest.raises(ZkDataError, match="has no REPLICATION endpoint"):
        znodes.decode_broker(1, data, listener_name="REPLICATION")
    ipv6 = znodes.encode_broker([EndPoint("PLAINTEXT", "::1", 9092)], 0)
    assert json.loads(ipv6)["endpoints"] == ["PLAINTEXT://[::1]:9092"]
    assert znodes.decode_broker(1, ipv6).host == "::1"


def test_broker_registration_written_by_kafka_decodes():
    # As a Kafka 3.x broker writes it (several listeners; the PLAINTEXT one is where minikafka connects).
    kafka = (
        b'{"features":{},"listener_security_protocol_map":{"INTERNAL":"SSL","PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["INTERNAL://kafka3:29092","PLAINTEXT://kafka3:9092"],"jmx_port":-1,"port":9092,'
        b'"host":"kafka3","version":5,"timestamp":"1731163180710","rack":"dc1"}'
    )
    assert znodes.decode_broker(3, kafka) == BrokerInfo(3, "kafka3", 9092, rack="dc1", endpoints=(
        EndPoint("INTERNAL", "kafka3", 29092, "SSL"), EndPoint("PLAINTEXT", "kafka3", 9092)))
    seed_001_v1 = b'{"jmx_port":-1,"host":"node1","version":1,"port":9092}'
    assert znodes.decode_broker(8, seed_001_v1) == BrokerInfo(8, "node1", 9092)


def test_topic_assignment_round_trip():
    data = znodes.encode_topic_assignment({1: [2, 3], 0: [1, 2]})
    assert data == b'{"version":2,"partitions":{"0":[1,2],"1":[2,3]},"adding_replicas":{},"removing_replicas":{}}'
    assert znodes.decode_topic_assignment(data) == {0: [1, 2], 1: [2, 3]}


def test_topic_assignment_from_kafka_and_from_seed_001():
    kafka_3 = (
        b'{"removing_replicas":{},"partitions":{"0":[0]},"topic_id":"ZOLr9CLNQjSW70hyIHx6BQ",'
        b'"adding_replicas":{},"version":3}'
    )
    assert znodes.decode_topic_assignment(kafka_3) == {0: [0]}
    seed = b'{"version":1,"partitions":{"12":[6],"8":[2],"4":[6],"11":[5],"1":[3],"0":[2]}}'
    assert list(znodes.decode_topic_assignment(seed).items()) == [
        (0, [2]),
        (1, [3]),
        (4, [6]),
        (8, [2]),
        (11, [5]),
        (12, [6]),
    ]


def test_partition_state_round_trip_in_kafkas_key_order():
    state = LeaderIsrAndControllerEpoch(leader=2, leader_epoch=48, isr=(2,), controller_epoch=29, zk_version=5)
    data = znodes.encode_partition_state(state)
    # The seed 001 example, byte for byte.
    assert data == b'{"controller_epoch":29,"leader":2,"version":1,"leader_epoch":48,"isr":[2]}'
    assert znodes.decode_partition_state(data, zk_version=5) == state
    kafka_38 = b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2],"leader_recovery_state":0}'
    assert znodes.decode_partition_state(kafka_38, 0) == LeaderIsrAndControllerEpoch(1, 0, (1, 2), 1, 0)


def test_topic_config_round_trip():
    data = znodes.encode_topic_config({"min.insync.replicas": "2", "segment.bytes": "1048576"})
    assert data == b'{"version":1,"config":{"min.insync.replicas":"2","segment.bytes":"1048576"}}'
    assert znodes.decode_topic_config(data) == {"min.insync.replicas": "2", "segment.bytes": "1048576"}


def test_controller_and_epoch():
    data = znodes.encode_controller(2, 1685460739018)
    assert data == b'{"version":2,"brokerid":2,"timestamp":"1685460739018","kraftControllerEpoch":-1}'
    assert znodes.decode_controller(data) == 2
    assert znodes.decode_controller(b'{"version":1,"brokerid":8,"timestamp":"1"}') == 8
    assert znodes.encode_controller_epoch(17) == b"17"
    assert znodes.decode_controller_epoch(b"17") == 17


def test_isr_change_notification_round_trip():
    data = znodes.encode_isr_change([("events", 0), ("events", 3)])
    assert data == b'{"version":1,"partitions":[{"topic":"events","partition":0},{"topic":"events","partition":3}]}'
    assert znodes.decode_isr_change(data) == [("events", 0), ("events", 3)]


@pytest.mark.parametrize(
    ("decode", "data"),
    [
        (lambda d: znodes.decode_broker(1, d), b'{"version":5,"endpoints":["SSL://h:1"]}'),
        (lambda d: znodes.decode_broker(1, d), b"not json"),
        (znodes.decode_topic_assignment, b'{"version":2,"partitions":{"x":[1]}}'),
        (znodes.decode_topic_assignment, b'{"version":2,"partitions":{"0":[true]}}'),
        (lambda d: znodes.decode_partition_state(d, 0), b'{"leader":1,"leader_epoch":0,"isr":[1]}'),
        (znodes.decode_topic_config, b"[]"),
        (znodes.decode_controller, b'{"brokerid":"1"}'),
        (znodes.decode_controller_epoch, b"one"),
        (znodes.decode_isr_change, b'{"version":1,"partitions":[1]}'),
    ],
)
def test_malformed_znodes_are_refused_clearly(decode, data: bytes):
    with pytest.raises(ZkDataError):
        decode(data)


def test_topic_znode_with_a_topic_id_and_a_reassignment_in_progress_is_kafkas_version_3():
    znode = znodes.TopicAssignment({0: [4, 1, 2], 1: [2, 3]}, adding={0: [4]}, removing={0: [1]},
                                   topic_id="ZOLr9CLNQjSW70hyIHx6BQ")
    data = znodes.encode_topic_znode(znode)
    assert data == (b'{"version":3,"topic_id":"ZOLr9CLNQjSW70hyIHx6BQ","partitions":{"0":[4,1,2],"1":[2,3]},'
                    b'"adding_replicas":{"0":[4]},"removing_replicas":{"0":[1]}}')
    assert znodes.decode_topic_znode(data) == znode
    assert znodes.decode_topic_znode(b'{"version":1,"partitions":{"0":[1]}}') == znodes.TopicAssignment({0: [1]})
    topic_id = znodes.new_topic_id()
    assert len(topic_id) == 22 and topic_id != znodes.new_topic_id()


def test_admin_znodes_in_seed_001s_schemas():
    reassignment = znodes.encode_reassignment({("topic3", 1): [1, 2, 3]})
    assert reassignment == b'{"version":1,"partitions":[{"topic":"topic3","partition":1,"replicas":[1,2,3]}]}'
    assert znodes.decode_reassignment(reassignment) == {("topic3", 1): [1, 2, 3]}
    election = b'{"version":1,"partitions":[{"topic":"topic1","partition":8},{"topic":"topic2","partition":16}]}'
    assert znodes.decode_partition_list(election) == [("topic1", 8), ("topic2", 16)]
    assert znodes.encode_partition_list([("topic1", 8), ("topic2", 16)]) == election
    assert znodes.delete_topic_path("topic4") == "/admin/delete_topics/topic4"


def test_pending_replica_deletions_round_trip():
    records = [znodes.PendingDeletion("t", 1, "ZOLr9CLNQjSW70hyIHx6BQ"), znodes.PendingDeletion("old", 0, None),
               znodes.PendingDeletion("t", 0, "ZOLr9CLNQjSW70hyIHx6BQ"), znodes.PendingDeletion("t", 0, "older")]
    data = znodes.encode_pending_deletions(records + records[:1])
    assert data == (b'{"version":2,"topics":[{"topic":"old","topic_id":null,"partitions":[0]},'
                    b'{"topic":"t","topic_id":"ZOLr9CLNQjSW70hyIHx6BQ","partitions":[0,1]},'
                    b'{"topic":"t","topic_id":"older","partitions":[0]}]}')
    assert znodes.decode_pending_deletions(data) == sorted(records)
    assert znodes.pending_replica_deletions_path(3) == "/admin/pending_replica_deletions/3"


def test_pending_replica_deletions_of_version_1_are_read():
    data = b'{"version":1,"partitions":[{"topic":"t","partition":1,"topic_id":"x"},{"topic":"t","partition":0}]}'
    assert znodes.decode_pending_deletions(data) == [znodes.PendingDeletion("t", 0),
                                                     znodes.PendingDeletion("t", 1, "x")]


def test_the_pending_deletions_of_ten_thousand_replicas_take_a_few_bytes_each():
    records = [znodes.PendingDeletion(f"topic-{p // 1000}", p % 1000, "ZOLr9CLNQjSW70hyIHx6BQ") for p in range(10_000)]
    assert len(znodes.encode_pending_deletions(records)) < 60_000


@pytest.mark.parametrize(
    ("decode", "data"),
    [
        (znodes.decode_topic_znode, b'{"version":3,"partitions":{"0":[1]},"topic_id":7}'),
        (znodes.decode_topic_znode, b'{"version":2,"partitions":{"0":[1]},"adding_replicas":[4]}'),
        (znodes.decode_reassignment, b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":["1"]}]}'),
        (znodes.decode_reassignment, b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},'
                                     b'{"topic":"t","partition":0,"replicas":[2]}]}'),
        (znodes.decode_partition_list, b'{"version":1,"partitions":[{"topic":"t"}]}'),
        (znodes.decode_pending_deletions, b'{"version":1,"partitions":[{"topic":"t","partition":0,"topic_id":1}]}'),
        (znodes.decode_pending_deletions, b'{"version":2,"topics":[{"topic":"t","partitions":["0"]}]}'),
    ],
)
def test_malformed_admin_znodes_are_refused_clearly(decode, data: bytes):
    with pytest.raises(ZkDataError):
        decode(data)


def test_cluster_id_znode_is_kafkas():
    assert znodes.CLUSTER_ID_PATH == "/cluster/id"
    assert znodes.encode_cluster_id("Wz3hJwq9T0y1e6bRfZbBLQ") == b'{"version":"1","id":"Wz3hJwq9T0y1e6bRfZbBLQ"}'
    assert znodes.decode_cluster_id(b'{"version":"1","id":"Wz3hJwq9T0y1e6bRfZbBLQ"}') == "Wz3hJwq9T0y1e6bRfZbBLQ"
    cluster_id = znodes.new_cluster_id()
    assert len(cluster_id) == 22 and cluster_id != znodes.new_cluster_id()
    with pytest.raises(ZkDataError):
        znodes.decode_cluster_id(b'{"version":"1"}')
