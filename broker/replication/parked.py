"""The requests parked until their partitions change, and waking them when they do."""

from __future__ import annotations

import asyncio
from collections.abc import Collection

from broker.replication.purgatory import Purgatory
from protocol.topic_partition import TopicPartition


class ParkedRequests:
    """The produce purgatory (acks=all produces waiting for the HW) and the fetch purgatory (fetches waiting for
    data), keyed by topic-partition: whoever changes a partition's HW, data or leadership wakes its requests."""

    def __init__(self) -> None:
        self.produces = Purgatory("produce")
        self.fetches = Purgatory("fetch")
        self._to_wake: set[TopicPartition] = set()  # see wake_soon

    def wake_soon(self, tp: TopicPartition) -> None:
        """Wake ``tp``'s parked requests in the loop's next iteration, with every partition changed meanwhile: each
        parked request re-checks once, not once per partition. Thousands change at once when a follower rejoins
        their ISRs (the batched writes answer together) or one fetch moves their HWs, and a follower's parked fetch
        watches thousands: waking it per partition cost seconds of the loop. Safe to defer: a parked request
        re-reads the state when it checks, and nothing else waits on the wake."""
        if not self._to_wake:
            asyncio.get_running_loop().call_soon(self._wake_pending)
        self._to_wake.add(tp)

    def _wake_pending(self) -> None:
        tps, self._to_wake = self._to_wake, set()
        self.wake_all(tps)

    def wake_all(self, tps: Collection[TopicPartition]) -> None:
        """Let parked produces and fetches on ``tps`` re-check (their HW, data or leadership changed), each once."""
        self.produces.check_and_complete_all(tps)
        self.fetches.check_and_complete_all(tps)

    def complete_all(self) -> None:
        """Answer every parked request now (at shutdown)."""
        self.produces.complete_all()
        self.fetches.complete_all()
