"""Idempotent producers on a real cluster: a batch retried after the leader appended it (its acknowledgement
timed out while the followers were paused) is written once, for librdkafka (confluent-kafka) and for minikafka's
own producer; and an idempotent acks=all stream through a leader killed with SIGKILL loses nothing acknowledged
and duplicates nothing, checked against the producers' history of acknowledgements."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid

import pytest
from confluent_kafka import Producer as ConfluentProducer

from client.cluster import ClusterState, kill_broker
from client.consumer import Consumer
from client.producer import Producer
from tests.integration.clusterutil import cluster_fixture, create_topic, metadata_leaders, paused
from tests.polling import eventually, poll_records

# Paused followers keep their sessions and stay in the ISR (10 s) far longer than a request times out (1.5 s), so
# the producer retries before the ISR could shrink even on a loaded machine; a killed broker's session ends in 10 s.
cluster = cluster_fixture(brokers=3, configs={"zookeeper.session.timeout.ms": "10000",
                                               "replica.lag.time.max.ms": "30000"})
REQUEST_TIMEOUT_MS = 1500
WARM_UP = b"warm-up"
TIMEOUT_S = 60


async def new_topic(cluster: ClusterState, partitions: int = 1) -> str:
    name = f"idempotent-{uuid.uuid4().hex[:8]}"
    await create_topic(cluster, name, partitions=partitions, replication_factor=3)
    return name


async def read_all(cluster: ClusterState, topic: str, partitions: int, expected: int) -> list[tuple[int, bytes]]:
    """Every record of the topic as (partition, value), in offset order per partition."""
    async with Consumer(cluster.bootstrap_servers) as consumer:
        consumer.assign([(topic, p) for p in range(partitions)])
        await consumer.seek_to_beginning()
        records = await poll_records(consumer, expected, timeout_s=TIMEOUT_S)
        records += await consumer.poll(timeout_ms=500)
    return [(r.partition, r.value) for r in records]


async def retried_while_followers_paused(cluster: ClusterState, topic: str, send, retried) -> None:
    """Pause both followers, send (the leader appends, the acknowledgement times out and the producer retries
    the same batch), wait until it retried, then let the followers catch up. The producer has already written
    WARM_UP, so its producer id and its connection to the leader are there before the pause begins."""
    leader = (await metadata_leaders(cluster, topic))[0]
    followers = [b.id for b in cluster.brokers if b.id != leader]
    async with paused(cluster, followers[0]), paused(cluster, followers[1]):
        send()
        await eventually(retried, "the producer to retry its batch", timeout_s=TIMEOUT_S)


async def test_librdkafka_retrying_an_appended_batch_writes_it_once(cluster: ClusterState) -> None:
    topic = await new_topic(cluster)
    stats: list[dict] = []
    producer = ConfluentProducer({
        "bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True, "acks": "all",
        "request.timeout.ms": REQUEST_TIMEOUT_MS, "retry.backoff.ms": 100, "linger.ms": 5,
        "statistics.interval.ms": 100, "stats_cb": lambda text: stats.append(json.loads(text))})
    producer.produce(topic, WARM_UP, partition=0)
    assert await asyncio.to_thread(producer.flush, TIMEOUT_S) == 0
    values = [f"once-{i}".encode() for i in range(10)]
    failures: list[object] = []

    def send() -> None:
        for value in values:
            producer.produce(topic, value, partition=0, on_delivery=lambda e, _m: failures.append(e) if e else None)

    async def retried() -> bool | None:
        producer.poll(0)
        produce_requests = max((b["req"].get("Produce", 0) for s in stats[-1:] for b in s["brokers"].values()),
                               default=0)
        return True if produce_requests >= 3 else None  # the warm-up's, the batch's, its retry

    await retried_while_followers_paused(cluster, topic, send, retried)
    assert await asyncio.to_thread(producer.flush, TIMEOUT_S) == 0 and failures == []
    producer.close()
    assert [value for _p, value in await read_all(cluster, topic, 1, 1 + len(values))] == [WARM_UP, *values]


async def test_minikafkas_producer_retrying_an_appended_batch_writes_it_once(
        cluster: ClusterState, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="client.producer")
    topic = await new_topic(cluster)
    values = [f"once-{i}".encode() for i in range(10)]
    async with Producer(cluster.bootstrap_servers, enable_idempotence=True,
                        request_timeout_ms=REQUEST_TIMEOUT_MS, retry_backoff_ms=100) as producer:
        await (await producer.send(topic, WARM_UP, partition=0))
        caplog.clear()
        futures = []

        def send() -> None:
            futures.append(asyncio.ensure_future(asyncio.gather(*[producer.send(topic, v, partition=0)
                                                                  for v in values])))

        async def retried() -> bool | None:
            return True if "retrying" in caplog.text else None

        await retried_while_followers_paused(cluster, topic, send, retried)
        sent = await futures[0]
        offsets = [(await future).offset for future in sent]
    assert offsets == list(range(1, 11))
    assert [value for _p, value in await read_all(cluster, topic, 1, 1 + len(values))] == [WARM_UP, *values]


async def test_an_idempotent_stream_through_a_killed_leader_loses_and_duplicates_nothing(
        cluster: ClusterState) -> None:
    topic = await new_topic(cluster, partitions=3)
    victim = (await metadata_leaders(cluster, topic))[0]
    acknowledged: list[bytes] = []
    failed: list[str] = []
    producer = ConfluentProducer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True,
                                  "acks": "all", "linger.ms": 5, "message.timeout.ms": 60000})

    def delivered(error: object, message: object) -> None:
        (failed.append(str(error)) if error else acknowledged.append(message.value()))  # type: ignore[attr-defined]

    count = 3000
    for i in range(count):
        producer.produce(topic, f"record-{i:05d}".encode(), on_delivery=delivered)
        if i == count // 3:
            producer.flush(TIMEOUT_S)
            kill_broker(cluster.directory, victim, "KILL")
        if i % 100 == 0:
            producer.poll(0)
            await asyncio.sleep(0.01)  # a stream, not one burst
    assert await asyncio.to_thread(producer.flush, TIMEOUT_S) == 0
    producer.close()
    assert failed == [] and len(acknowledged) == count
    history = await read_all(cluster, topic, 3, count)
    values = [value for _p, value in history]
    assert len(values) == len(set(values)), "duplicated records"
    assert set(acknowledged) <= set(values), "acknowledged records were lost"
