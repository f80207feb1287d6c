"""Compressed batches from every stock client, read back by every other one: kcat (-z), confluent-kafka
(librdkafka), kafka-python, aiokafka, Kafka's console producer and ProducerPerformance, and minikafka's producer,
each with gzip, snappy, lz4 and zstd; read by kcat, confluent-kafka, kafka-python, aiokafka, Kafka's console
consumer, minikafka's consumer and `minikafka consume`, and on disk by Kafka's DumpLogSegments --deep-iteration and
`minikafka dump-log`. The broker keeps each batch as its producer compressed it, or recompresses into a topic's
compression.type; bad payloads are refused and the broker goes on serving. One cluster (3 brokers) serves every
test."""

from __future__ import annotations

import asyncio
import json
import re
import struct
import uuid
from pathlib import Path

import aiokafka
import kafka
import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
from crc32c import crc32c

from client.cluster import ClusterState
from client.consumer import Consumer
from client.producer import Producer
from protocol.apis.produce import ProducePartition, ProduceRequest, ProduceResponse
from protocol.apis.shapes import Topic
from protocol.compression import CODECS
from protocol.errors import ErrorCode
from protocol.records import BatchBuilder, iter_batches
from tests.integration.clusterutil import (
    cli,
    cluster_fixture,
    connect,
    create_topic,
    metadata_leaders,
    produce,
    wait_identical_replicas,
)
from tests.integration.test_stock_kafka_clients import TIMEOUT_S, kcat
from tests.kafka_broker import TOOL_TIMEOUT_S, kafka_tool

cluster = cluster_fixture(brokers=3)
RECORDS = 40  # from each producer
PRODUCERS = ["kcat", "confluent-kafka", "kafka-python", "aiokafka", "kafka-console-producer", "minikafka"]
CODEC_NAMES = ["gzip", "snappy", "lz4", "zstd"]
#: (producer, codec) whose batches librdkafka sends uncompressed, by its own choice (it logs "Broker does not support
#: compression type"): Debian's kcat (librdkafka 2.0) compresses with gzip, snappy or lz4 only for a broker whose
#: Produce versions start at 0 (Kafka 4.0's, like minikafka's, start at 3; librdkafka fixed that check in 2.11).
#: (librdkafka 2.x compresses with lz4 only for a broker that advertises FindCoordinator, which minikafka does.)
UNCOMPRESSED_BY_THE_CLIENT = {("kcat", "gzip"), ("kcat", "snappy"), ("kcat", "lz4")}


def codec_written(producer: str, codec: str) -> int:
    """The codec id of the batches ``producer`` writes when asked for ``codec``."""
    return 0 if (producer, codec) in UNCOMPRESSED_BY_THE_CLIENT else CODECS[codec]


def expected_records(codec: str, producer: str) -> list[tuple[str, str]]:
    """(key, value) of a producer's records: compressible text, distinct per producer."""
    return [(f"{producer}-{i}", f"{codec} from {producer}, record {i}: " + "compressible text " * 8)
            for i in range(RECORDS)]


def new_topic(cluster: ClusterState, prefix: str, configs: dict[str, str] | None = None) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_topic(cluster, name, partitions=1, replication_factor=3, configs=configs))
    return name


def stored_batches(cluster: ClusterState, topic: str) -> list:
    """The batch headers of partition 0 on the broker that leads it."""
    leader = asyncio.run(metadata_leaders(cluster, topic))[0]
    segment = Path(cluster.broker(leader).log_dir) / f"{topic}-0" / "00000000000000000000.log"
    return [header for _position, header in iter_batches(segment.read_bytes())]


# ------------------------------------------------------------------------------------------------ producers


def produce_with(producer: str, cluster: ClusterState, topic: str, codec: str,
                 records: list[tuple[str, str]]) -> None:
    """Send ``records`` to partition 0 of ``topic`` with ``producer``, compressed with ``codec``, acks=all."""
    bootstrap = cluster.bootstrap_servers
    if producer == "kcat":
        kcat(cluster, "-P", "-t", topic, "-p", "0", "-K", "\t", "-z", codec, "-X", "acks=all",
             stdin="".join(f"{key}\t{value}\n" for key, value in records))
    elif producer == "confluent-kafka":
        sender = ConfluentProducer({"bootstrap.servers": bootstrap, "acks": "all", "compression.type": codec,
                                    "linger.ms": 20})
        for key, value in records:
            sender.produce(topic, key=key, value=value, partition=0)
        assert sender.flush(TIMEOUT_S) == 0
    elif producer == "kafka-python":
        sender = kafka.KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, linger_ms=20)
        try:
            futures = [sender.send(topic, key=k.encode(), value=v.encode(), partition=0) for k, v in records]
            sender.flush(timeout=TIMEOUT_S)
            assert all(future.get(timeout=TIMEOUT_S) for future in futures)
        finally:
            sender.close()
    elif producer == "aiokafka":
        asyncio.run(_aiokafka_produce(bootstrap, topic, codec, records))
    elif producer == "kafka-console-producer":
        kafka_tool("kafka.tools.ConsoleProducer", "--bootstrap-server", bootstrap, "--topic", topic,
                   "--compression-codec", codec, "--property", "parse.key=true", "--property", "key.separator=\t",
                   "--producer-property", "linger.ms=20",
                   stdin="".join(f"{key}\t{value}\n" for key, value in records))
    else:
        asyncio.run(_minikafka_produce(bootstrap, topic, codec, records))


async def _aiokafka_produce(bootstrap: str, topic: str, codec: str, records: list[tuple[str, str]]) -> None:
    sender = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, linger_ms=20)
    await sender.start()
    try:
        futures = [await sender.send(topic, value.encode(), key=key.encode(), partition=0) for key, value in records]
        await asyncio.gather(*futures)
    finally:
        await sender.stop()


async def _minikafka_produce(bootstrap: str, topic: str, codec: str, records: list[tuple[str, str]]) -> None:
    async with Producer(bootstrap, compression_type=codec, linger_ms=20) as sender:
        futures = [await sender.send(topic, value.encode(), key=key.encode(), partition=0) for key, value in records]
        await sender.flush()
        for future in futures:
            await future


# ------------------------------------------------------------------------------------------------ consumers


def consume_with(consumer: str, cluster: ClusterState, topic: str, count: int) -> list[tuple[str, str]]:
    """The first ``count`` records of partition 0 of ``topic`` as (key, value), read with ``consumer``."""
    bootstrap = cluster.bootstrap_servers
    if consumer == "kcat":
        out = kcat(cluster, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-f", "%k\\t%s\\n")
        return [tuple(line.split("\t", 1)) for line in out.splitlines()]
    if consumer == "confluent-kafka":
        return _confluent_consume(bootstrap, topic, count)
    if consumer == "kafka-python":
        reader = kafka.KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=10_000)
        try:
            reader.assign([kafka.TopicPartition(topic, 0)])
            reader.seek_to_beginning()
            return [(r.key.decode(), r.value.decode()) for _, r in zip(range(count), reader, strict=False)]
        finally:
            reader.close()
    if consumer == "aiokafka":
        return asyncio.run(_aiokafka_consume(bootstrap, topic, count))
    if consumer == "kafka-console-consumer":
        out = kafka_tool("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", bootstrap,
                         "--topic", topic, "--partition", "0", "--offset", "earliest", "--max-messages", str(count),
                         "--property", "print.key=true", "--property", "key.separator=\t")
        return [tuple(line.split("\t", 1)) for line in out.splitlines()]
    if consumer == "minikafka consume":
        out = cli("consume", topic, "--partition", "0", "--from-beginning", "--max-messages", str(count), "--json",
                  "--bootstrap-server", bootstrap).stdout
        return [(record["key"], record["value"]) for record in map(json.loads, out.splitlines())]
    return asyncio.run(_minikafka_consume(bootstrap, topic, count))


def _confluent_consume(bootstrap: str, topic: str, count: int) -> list[tuple[str, str]]:
    reader = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        reader.assign([ConfluentTopicPartition(topic, 0, 0)])
        found: list[tuple[str, str]] = []
        for _ in range(TIMEOUT_S * 10):
            message = reader.poll(0.1)
            if message is not None:
                assert message.error() is None, message.error()
                found.append((message.key().decode(), message.value().decode()))
                if len(found) == count:
                    break
        return found
    finally:
        reader.close()


async def _aiokafka_consume(bootstrap: str, topic: str, count: int) -> list[tuple[str, str]]:
    reader = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await reader.start()
    try:
        tp = aiokafka.TopicPartition(topic, 0)
        reader.assign([tp])
        await reader.seek_to_beginning(tp)
        found: list[tuple[str, str]] = []
        async with asyncio.timeout(TIMEOUT_S):
            while len(found) < count:
                batch = await reader.getmany(tp, timeout_ms=1000)
                found += [(r.key.decode(), r.value.decode()) for r in batch.get(tp, [])]
        return found
    finally:
        await reader.stop()


async def _minikafka_consume(bootstrap: str, topic: str, count: int) -> list[tuple[str, str]]:
    async with Consumer(bootstrap, auto_offset_reset="earliest") as reader:
        reader.assign([(topic, 0)])
        found: list[tuple[str, str]] = []
        async with asyncio.timeout(TIMEOUT_S):
            while len(found) < count:
                found += [(r.key.decode(), r.value.decode()) for r in await reader.poll(timeout_ms=500)]
        return found


CONSUMERS = ["kcat", "confluent-kafka", "kafka-python", "aiokafka", "kafka-console-consumer", "minikafka",
             "minikafka consume"]


# ------------------------------------------------------------------------------------------------ the tests


@pytest.mark.parametrize("codec", CODEC_NAMES)
def test_every_client_produces_and_reads_every_other_clients_batches(cluster: ClusterState, codec: str) -> None:
    topic = new_topic(cluster, f"zip-{codec}")
    expected: list[tuple[str, str]] = []
    for producer in PRODUCERS:
        records = expected_records(codec, producer)
        produce_with(producer, cluster, topic, codec, records)
        expected += records
        written = [h for h in stored_batches(cluster, topic) if h.base_offset >= len(expected) - RECORDS]
        assert sum(h.record_count for h in written) == RECORDS, producer
        assert {h.compression for h in written} == {codec_written(producer, codec)}, f"{producer} with {codec}"
    asyncio.run(wait_identical_replicas(cluster, topic, {0: [1, 2, 3]}))  # followers copy the compressed bytes
    for consumer in CONSUMERS:
        assert consume_with(consumer, cluster, topic, len(expected)) == expected, consumer

    for broker in cluster.brokers:
        segment = Path(broker.log_dir) / f"{topic}-0" / "00000000000000000000.log"
        dumped = kafka_tool("kafka.tools.DumpLogSegments", "--deep-iteration", "--print-data-log",
                            "--files", str(segment))
        assert set(re.findall(r"compresscodec: (\w+)", dumped)) == {
            "none" if codec_written(producer, codec) == 0 else codec for producer in PRODUCERS}, dumped[:2000]
        assert "isvalid: false" not in dumped
        assert re.findall(r"\| offset: (\d+) .* key: (\S+) payload: ", dumped) == [
            (str(offset), key) for offset, (key, _value) in enumerate(expected)], dumped[:2000]
        ours = cli("dump-log", "--print-data", "--json", str(segment)).stdout.splitlines()
        assert [(r["key"], r["value"]) for r in map(json.loads, ours) if "value" in r] == expected


@pytest.mark.parametrize("codec", CODEC_NAMES)
def test_kafkas_producer_performance_with_every_codec(cluster: ClusterState, codec: str) -> None:
    topic = new_topic(cluster, f"perf-{codec}")
    out = kafka_tool("org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", "20000",
                     "--record-size", "200", "--throughput", "-1", "--producer-props",
                     f"bootstrap.servers={cluster.bootstrap_servers}", "acks=all", f"compression.type={codec}")
    assert re.search(r"^20000 records sent", out, re.MULTILINE), out
    assert "Exception" not in out, out
    batches = stored_batches(cluster, topic)
    assert sum(h.record_count for h in batches) == 20000
    assert {h.compression for h in batches} == {CODECS[codec]}
    assert len(asyncio.run(_minikafka_consume_values(cluster.bootstrap_servers, topic, 20000))) == 20000


async def _minikafka_consume_values(bootstrap: str, topic: str, count: int) -> list[bytes | None]:
    async with Consumer(bootstrap, auto_offset_reset="earliest") as reader:
        reader.assign([(topic, 0)])
        found: list[bytes | None] = []
        async with asyncio.timeout(TOOL_TIMEOUT_S):
            while len(found) < count:
                found += [r.value for r in await reader.poll(timeout_ms=500)]
        return found


@pytest.mark.parametrize(("topic_codec", "producer_codec"), [("zstd", "gzip"), ("uncompressed", "lz4"),
                                                             ("snappy", "none")])
def test_a_topics_compression_type_recompresses_what_clients_send(cluster: ClusterState, topic_codec: str,
                                                                  producer_codec: str) -> None:
    topic = new_topic(cluster, "recompressed", {"compression.type": topic_codec})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    entries = next(iter(admin.describe_configs([ConfigResource("topic", topic)]).values())).result(TIMEOUT_S)
    assert (entries["compression.type"].value, entries["compression.type"].source) == (
        topic_codec, ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    records = expected_records(producer_codec, "kafka-console-producer")
    produce_with("kafka-console-producer", cluster, topic, producer_codec, records)
    stored = {h.compression for h in stored_batches(cluster, topic)}
    assert stored == {0 if topic_codec == "uncompressed" else CODECS[topic_codec]}
    asyncio.run(wait_identical_replicas(cluster, topic, {0: [1, 2, 3]}))
    for consumer in ("kafka-console-consumer", "confluent-kafka", "minikafka"):
        assert consume_with(consumer, cluster, topic, RECORDS) == records, consumer


def _raw_batch(codec: int, payload: bytes, count: int) -> bytes:
    """A batch of ``count`` records whose records region is ``payload`` as given, marked ``codec``, its CRC right."""
    out = bytearray(61) + payload
    struct.pack_into(">qiibIhiqqqhii", out, 0, 0, len(out) - 12, -1, 2, 0, codec, count - 1, 0, 0, -1, -1, -1, count)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


async def _produce_raw(cluster: ClusterState, topic: str, batch: bytes) -> int:
    leader = (await metadata_leaders(cluster, topic))[0]
    async with connect(cluster.broker(leader)) as connection:
        request = ProduceRequest(acks=-1, timeout_ms=5000, topics=[Topic(
            name=topic, partitions=[ProducePartition(partition=0, records=batch)])])
        response = await connection.request(request)
        assert isinstance(response, ProduceResponse)
        code = response.topics[0].partitions[0].error_code
        await produce(connection, topic, 0, [b"still serving"])
    return code


def test_bad_compressed_batches_are_refused_and_the_broker_keeps_serving(cluster: ClusterState) -> None:
    topic = new_topic(cluster, "refused")
    good = BatchBuilder(compression=CODECS["zstd"])
    for i in range(10):
        good.append(b"value %d" % i)
    payload = good.build()[61:]
    corrupt = bytearray(payload)
    corrupt[len(corrupt) // 2] ^= 0xFF
    cases = {
        ErrorCode.CORRUPT_MESSAGE: [_raw_batch(4, b"not zstd at all", 10), _raw_batch(4, payload, 11),
                                    _raw_batch(4, bytes(corrupt), 10), _raw_batch(3, payload, 10)],
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE: [_raw_batch(5, payload, 10), _raw_batch(7, payload, 10)],
    }
    for code, batches in cases.items():
        for batch in batches:
            assert asyncio.run(_produce_raw(cluster, topic, batch)) == code
    batches = stored_batches(cluster, topic)
    assert [h.record_count for h in batches] == [1] * 6  # only the "still serving" batches were appended
