"""Helpers the chaos tests share: a paced producer load that records every acknowledgement (`Load`), checking
that no acknowledged record is lost, reading a topic back in order, raw Produce requests that wait out the
broker's own timeout, a ZooKeeper session that outlasts the brokers', and what the brokers wrote in their logs."""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from client.accumulator import FutureRecordMetadata
from client.cluster import ClusterState
from client.consumer import Consumer
from client.producer import Producer
from protocol.apis.produce import ProducePartitionResponse
from tests.integration.clusterutil import produce_answer, zookeeper_of
from tests.polling import eventually
from transport.connection import BrokerConnection
from zk.client import ZkClient

#: How much longer than the broker's own produce timeout a raw Produce request waits for its answer.
ANSWER_MARGIN_MS = 10_000


# ------------------------------------------------------------------------------------------------ load


@dataclass
class Ack:
    partition: int
    offset: int
    value: bytes
    at: float  # time.monotonic() when the acknowledgement arrived


@dataclass
class Load:
    """A producer task sending `prefix-N` records round-robin to `partitions` at about `rate` per second, at most
    `limit` of them, with at most `window` unacknowledged; it records every acknowledgement and failure.

    The producers given to it use linger_ms=0: each record goes out at once, so acknowledgement times measure
    the cluster, not batching."""

    producer: Producer
    topic: str
    partitions: tuple[int, ...]
    prefix: str
    rate: float = 400.0
    limit: int = 20_000
    window: int = 400
    acks: list[Ack] = field(default_factory=list)
    failures: list[tuple[int, bytes, BaseException]] = field(default_factory=list)
    sent: int = 0
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _pending: set[FutureRecordMetadata] = field(default_factory=set)
    _settled: asyncio.Event = field(default_factory=asyncio.Event)  # set whenever a pending record settles

    def acked(self, partition: int, after: float = float("-inf")) -> list[Ack]:
        return [a for a in self.acks if a.partition == partition and a.at > after]

    def stop(self) -> None:
        self._stop.set()

    def _done(self, partition: int, value: bytes, future: FutureRecordMetadata) -> None:
        self._pending.discard(future)
        self._settled.set()
        if future.cancelled():
            self.failures.append((partition, value, asyncio.CancelledError()))
        elif future.exception() is not None:
            self.failures.append((partition, value, future.exception()))  # type: ignore[arg-type]
        else:
            self.acks.append(Ack(partition, future.result().offset, value, time.monotonic()))

    async def run(self) -> None:
        interval = 1.0 / self.rate
        next_send = time.monotonic()
        while not self._stop.is_set() and self.sent < self.limit:
            if len(self._pending) >= self.window:
                self._settled.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._settled.wait(), timeout=1.0)
                continue
            partition = self.partitions[self.sent % len(self.partitions)]
            value = f"{self.prefix}-{self.sent}".encode()
            future = await self.producer.send(self.topic, value, partition=partition)
            self._pending.add(future)
            future.add_done_callback(lambda f, p=partition, v=value: self._done(p, v, f))
            self.sent += 1
            next_send += interval
            delay = next_send - time.monotonic()
            if delay > 0:  # pacing the load, not waiting for a condition
                await asyncio.sleep(delay)
            else:
                next_send = time.monotonic()
        await self.producer.flush()

    def diagnose(self) -> str:
        """The producer's internal state, for a failure message (best effort: private attributes)."""
        producer = self.producer
        out = io.StringIO()
        try:
            accumulator = producer._accumulator
            now = producer._clock()
            print(f"in flight {dict(producer._in_flight)}, muted {accumulator._muted}, last refresh "
                  f"{now - producer._last_refresh_ms:.0f} ms ago, refresher {producer._refresher!r}", file=out)
            for tp, queue in accumulator._queues.items():
                batches = [(b, b.attempts, round(now - b.created_ms), b.sealed) for b in queue]
                print(f"  queue {tp} (batch, attempts, age ms, sealed): {batches}", file=out)
            leaders = [(i.partition, i.leader, i.leader_epoch) for i in producer.metadata.partitions(self.topic) or []]
            print(f"  metadata (partition, leader, epoch) {leaders}, brokers {list(producer.metadata.brokers)}",
                  file=out)
            tasks = [("sender", producer._sender), ("refresher", producer._refresher),
                     *[("request", r) for r in producer._requests]]
            for name, task in tasks:
                if task is not None:
                    print(f"  task {name} done={task.done()}", file=out)
                    if not task.done():
                        task.print_stack(file=out)
            for key, connection in producer.metadata._connections.items():
                print(f"  connection {key} closed={connection.closed} in flight={connection.in_flight}", file=out)
        except Exception as e:
            print(f"(cannot inspect the producer: {e!r})", file=out)
        return out.getvalue()

    def max_gap(self, partition: int, start: float, end: float) -> float:
        """The longest time without an acknowledgement on `partition` within [start, end]."""
        times = [start, *sorted(a.at for a in self.acks if a.partition == partition and start < a.at < end), end]
        return max(b - a for a, b in itertools.pairwise(times))


async def wait_acks(load: Load, partition: int, count: int, after: float = float("-inf"),
                    timeout_s: float = 30) -> None:
    async def enough() -> bool | None:
        assert not load.failures, f"failed sends: {load.failures[:5]}"
        return True if len(load.acked(partition, after)) >= count else None

    def status() -> str:
        return f"{count} acknowledgements on partition {partition} (have {len(load.acked(partition, after))}, " \
               f"sent {load.sent})\n{load.diagnose()}"

    await eventually(enough, status, timeout_s=timeout_s)


def check_no_loss(load: Load, records: Mapping[int, Mapping[int, bytes]]) -> None:
    """Every acknowledged record is where its acknowledgement said."""
    missing = [(a.partition, a.offset, a.value) for a in load.acks if records[a.partition].get(a.offset) != a.value]
    assert not missing, (f"{len(missing)} of {len(load.acks)} acknowledged records are not at their offset, e.g. "
                         f"{[(p, o, v, records[p].get(o)) for p, o, v in missing[:5]]}")


# ------------------------------------------------------------------------------------------------ reading back


async def read_all(cluster: ClusterState, topic: str, ends: Mapping[int, int]) -> dict[int, dict[int, bytes]]:
    """Every record below `ends[partition]` read by a consumer from the beginning, by partition and offset.
    Fails if an offset comes twice or a partition's offsets go backwards."""
    got: dict[int, dict[int, bytes]] = {p: {} for p in ends}
    last = dict.fromkeys(ends, -1)
    async with Consumer(cluster.bootstrap_servers, request_timeout_ms=10_000) as consumer:
        consumer.assign([(topic, p) for p in ends])
        await consumer.seek_to_beginning()

        async def everything() -> dict[int, dict[int, bytes]] | None:
            for record in await consumer.poll(timeout_ms=200, max_records=10_000):
                assert record.offset > last[record.partition], (
                    f"partition {record.partition}: offset {record.offset} after {last[record.partition]}")
                last[record.partition] = record.offset
                got[record.partition][record.offset] = record.value or b""
            return got if all(len(got[p]) >= end for p, end in ends.items()) else None

        await eventually(everything, lambda: f"a consumer to read {dict(ends)} records of {topic} "
                                             f"(has {({p: len(o) for p, o in got.items()})})", timeout_s=30)
    for partition, end in ends.items():
        assert sorted(got[partition]) == list(range(end)), f"partition {partition}: offsets are not 0..{end - 1}"
    return got


async def produce_raw(connection: BrokerConnection, topic: str, partition: int, values: Sequence[bytes], *,
                      acks: int, timeout_ms: int = 5000) -> ProducePartitionResponse:
    """One Produce request of one batch, waiting for the answer up to the broker's timeout and ANSWER_MARGIN_MS;
    returns the partition's answer, error or not."""
    return await produce_answer(connection, topic, partition, values, acks=acks, timeout_ms=timeout_ms,
                                request_timeout_ms=timeout_ms + ANSWER_MARGIN_MS)


def zk_observer(cluster: ClusterState) -> AbstractAsyncContextManager[ZkClient]:
    """A ZooKeeper session of the test's own whose timeout (10 s) outlasts the brokers' short ones."""
    return zookeeper_of(cluster, session_timeout_ms=10_000)


# ------------------------------------------------------------------------------------------------ broker logs


def state_changes(cluster: ClusterState, broker_id: int, topic: str, partition: int) -> list[dict[str, Any]]:
    """The lines of a broker's state-change.log about one partition."""
    path = Path(cluster.broker(broker_id).log_dir) / "state-change.log"
    lines = path.read_text().splitlines() if path.exists() else []
    changes = [json.loads(line) for line in lines if line.strip()]
    return [c for c in changes if c.get("topic") == topic and c.get("partition") == partition]


def logged_at_ms(server_log: Path, message: str) -> int | None:
    """Epoch milliseconds of the last server.log line containing `message` (the broker logs local time)."""
    found = None
    for line in server_log.read_text(errors="replace").splitlines():
        if message in line and line.startswith("["):
            stamp = line[1:line.index("]")]
            found = int(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000)
    return found
