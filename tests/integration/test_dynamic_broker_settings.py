"""Broker settings Kafka changes at run time, changed with kafka-configs --entity-type brokers on a real cluster
(3 brokers) and applied without a restart: min.insync.replicas (the cluster default, then one broker's own value
over it) refuses and then accepts acks=all produces to a partition missing a follower; num.replica.fetchers moves
each followed partition to the fetcher Kafka would pick (Kafka's FetcherLagMetrics name them); a log cleaner
started with a backoff of an hour cleans at once once log.cleaner.backoff.ms is lowered. (The controller's
unclean.leader.election.enable is tested in test_controller_failover.py.) One cluster serves every test."""

from __future__ import annotations

import urllib.request
import uuid

from confluent_kafka import KafkaError, Producer
from prometheus_client.parser import text_string_to_metric_families

from broker.replication.fetcher import fetcher_id
from client.cluster import ClusterState
from protocol.topic_partition import TopicPartition
from tests.integration.clusterutil import (
    SMALL_TIMEOUTS,
    cluster_fixture,
    consume_records,
    create_topic,
    healthy_fixture,
    status_json,
    stop_broker,
    wait_metadata,
)
from tests.integration.test_stock_kafka_clients import TIMEOUT_S, kafka_tool
from tests.polling import eventually

cluster = cluster_fixture(brokers=3, configs={**SMALL_TIMEOUTS, "log.cleaner.backoff.ms": "3600000"})
healthy = healthy_fixture()


def configs(cluster: ClusterState, *entity: str) -> tuple[str, ...]:
    """kafka-configs on the brokers' entity (`--entity-default`, or `--entity-name`, ID)."""
    return ("kafka.admin.ConfigCommand", "--bootstrap-server", cluster.bootstrap_servers, "--entity-type", "brokers",
            *entity)


def produce_error(cluster: ClusterState, topic: str) -> int:
    """The error code of one acks=all record to partition 0, sent once (no retries): 0 when acknowledged."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "retries": 0,
                         "enable.idempotence": False, "linger.ms": 0})
    outcome: list[int] = []
    producer.produce(topic, value=b"v", partition=0,
                     on_delivery=lambda error, _message: outcome.append(error.code() if error else 0))
    assert producer.flush(TIMEOUT_S) == 0
    return outcome[0]


async def test_min_insync_replicas_changed_at_run_time_refuses_then_accepts_acks_all(healthy: ClusterState) -> None:
    topic = f"min-isr-{uuid.uuid4().hex[:8]}"
    await create_topic(healthy, topic, assignments={0: [1, 2, 3]}, in_sync=True)
    await stop_broker(healthy, 3)
    await wait_metadata([healthy.broker(1)], topic, 0, lambda s: sorted(s.isr) == [1, 2], "broker 3 out of the ISR")
    assert produce_error(healthy, topic) == 0
    default, leader = configs(healthy, "--entity-default"), configs(healthy, "--entity-name", "1")
    try:
        kafka_tool(*default, "--alter", "--add-config", "min.insync.replicas=3")
        await eventually(lambda: produce_error(healthy, topic) == KafkaError.NOT_ENOUGH_REPLICAS,
                         "acks=all refused with two of three replicas in the ISR")
        kafka_tool(*leader, "--alter", "--add-config", "min.insync.replicas=2")  # the leader's own, over the default
        await eventually(lambda: produce_error(healthy, topic) == 0, "acks=all accepted again")
        said = kafka_tool(*leader, "--describe")
        assert "min.insync.replicas=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:min.insync.replicas=2, " \
               "DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=3" in said, said
    finally:
        kafka_tool(*leader, "--alter", "--delete-config", "min.insync.replicas")
        kafka_tool(*default, "--alter", "--delete-config", "min.insync.replicas")


def fetchers_of(address: str, topic: str) -> dict[int, str]:
    """Partition -> the fetcher that follows it, from one broker's FetcherLagMetrics."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {int(s.labels["partition"]): s.labels["clientId"] for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == "kafka_server_fetcherlagmetrics_consumerlag" and s.labels["topic"] == topic}


async def test_num_replica_fetchers_changed_at_run_time_moves_partitions_to_the_fetchers_kafka_picks(
        cluster: ClusterState) -> None:
    topic = f"fetchers-{uuid.uuid4().hex[:8]}"
    partitions = range(6)
    await create_topic(cluster, topic, assignments={p: [1, 2] for p in partitions}, in_sync=True)
    address = next(b["metrics_address"] for b in status_json(cluster.directory)["brokers"] if b["id"] == 2)
    one = {p: "ReplicaFetcherThread-0-1" for p in partitions}
    await eventually(lambda: fetchers_of(address, topic) == one, "one fetcher for every partition")
    wanted = {p: f"ReplicaFetcherThread-{fetcher_id(TopicPartition(topic, p), 3)}-1" for p in partitions}
    assert len(set(wanted.values())) > 1  # the test shows a move
    follower = configs(cluster, "--entity-name", "2")
    try:
        kafka_tool(*follower, "--alter", "--add-config", "num.replica.fetchers=3")
        await eventually(lambda: fetchers_of(address, topic) == wanted, "the partitions spread over three fetchers")
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0})
        for p in partitions:  # acknowledged once the follower's new fetcher has the record
            producer.produce(topic, value=b"after the move", partition=p)
        assert producer.flush(TIMEOUT_S) == 0
        await wait_metadata([cluster.broker(1)], topic, 0, lambda s: sorted(s.isr) == [1, 2], "a full ISR")
    finally:
        kafka_tool(*follower, "--alter", "--delete-config", "num.replica.fetchers")
    await eventually(lambda: fetchers_of(address, topic) == one, "back to one fetcher")


async def test_log_cleaner_backoff_lowered_at_run_time_cleans_without_waiting_out_the_old_one(
        cluster: ClusterState) -> None:
    topic = f"cleaned-{uuid.uuid4().hex[:8]}"
    await create_topic(cluster, topic, assignments={0: [1]}, in_sync=True,
                       configs={"cleanup.policy": "compact", "segment.bytes": "1024",
                                "min.cleanable.dirty.ratio": "0.01"})
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0})
    for i in range(300):
        producer.produce(topic, key=b"key-%d" % (i % 5), value=b"value-%03d" % i, partition=0)
        if i % 20 == 0:
            assert producer.flush(TIMEOUT_S) == 0
    assert producer.flush(TIMEOUT_S) == 0
    # the cleaner looked when the broker started and sleeps for an hour: nothing is cleaned yet
    assert len(await consume_records(cluster, topic)) == 300
    default = configs(cluster, "--entity-default")
    try:
        kafka_tool(*default, "--alter", "--add-config", "log.cleaner.backoff.ms=200")

        async def cleaned() -> bool:
            return len(await consume_records(cluster, topic)) < 100

        await eventually(cleaned, "the compacted topic cleaned")
        latest = {r.key: r.value for r in await consume_records(cluster, topic)}
        assert latest == {b"key-%d" % k: b"value-%03d" % (295 + k) for k in range(5)}
    finally:
        kafka_tool(*default, "--alter", "--delete-config", "log.cleaner.backoff.ms")
