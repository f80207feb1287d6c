"""Reading records back with stock clients' consumers until a count of them is read, to a deadline."""

from __future__ import annotations

import asyncio

import aiokafka
import confluent_kafka

from tests.polling import WAIT_S, wait_for


def confluent_values(consumer: confluent_kafka.Consumer, count: int, what: str,
                     timeout_s: float = WAIT_S) -> list[bytes]:
    """The values a subscribed confluent-kafka consumer polls until it has `count` of them (errors skipped); the
    consumer is closed after. `what` says where they were read, for the timeout's message."""
    seen: list[bytes] = []

    def all_read() -> bool:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.append(message.value())
        return len(seen) >= count

    try:
        wait_for(all_read, lambda: f"{count} records read back {what}, got {len(seen)}", timeout_s=timeout_s)
    finally:
        consumer.close()
    return seen


async def aiokafka_values(consumer: aiokafka.AIOKafkaConsumer, count: int, timeout_s: float) -> list[bytes]:
    """The values an aiokafka consumer reads until it has `count` of them."""
    values: list[bytes] = []
    async with asyncio.timeout(timeout_s):
        while len(values) < count:
            batches = await consumer.getmany(timeout_ms=500)
            values += [record.value for records in batches.values() for record in records]
    return values
