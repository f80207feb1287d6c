"""A follower fetcher stops when asked even if its partitions changed at the same moment (asyncio.wait_for on
Python 3.11 can swallow a cancellation that arrives as the awaited event is set; a broker's shutdown then waited
for the fetcher forever)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from broker.config import BrokerConfig
from broker.replication.fetcher import ReplicaFetcher
from protocol.topic_partition import TopicPartition


class Unreachable:
    """A connection to a leader that refuses it: the fetcher backs off and waits for a change."""

    closed = True

    async def connect(self) -> None:
        raise OSError("connection refused")

    async def close(self) -> None:
        pass


async def test_a_fetcher_stops_when_its_partitions_change_as_it_is_stopped():
    config = BrokerConfig.from_properties({"broker.id": "1", "zookeeper.connect": "127.0.0.1:1",
                                           "replica.fetch.backoff.ms": "60000"})
    fetcher = ReplicaFetcher(config, None, 2, "127.0.0.1", 1, lambda host, port: Unreachable())  # type: ignore[arg-type]
    tp = TopicPartition("t", 0)
    fetcher.add(tp, SimpleNamespace(leader_epoch=0))  # type: ignore[arg-type]
    for _ in range(20):  # it tries, fails and waits out the backoff (or a change)
        await asyncio.sleep(0)
    fetcher.remove(tp)  # a StopReplica: a change...
    stopping = asyncio.create_task(fetcher.stop())  # ...as the broker shuts down
    done, _ = await asyncio.wait({stopping}, timeout=5)
    if not done:  # the cancellation was lost: cancel again so that the test ends
        stopping.cancel()
        fetcher._task.cancel()
    await asyncio.gather(stopping, return_exceptions=True)
    assert done, "the fetcher did not stop: its cancellation was lost"
