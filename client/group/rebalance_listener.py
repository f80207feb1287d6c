"""The application's rebalance callbacks (Kafka's ConsumerRebalanceListener): told which partitions a consumer
gives up, is given, or lost without giving them up. A callback may be a plain function or a coroutine function."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence

from protocol.topic_partition import TopicPartition

log = logging.getLogger(__name__)


class ConsumerRebalanceListener:
    """Override what you need. `on_partitions_revoked`: before a rebalance, the partitions given up (commit their
    offsets here); `on_partitions_assigned`: after it, the partitions added; `on_partitions_lost`: partitions taken
    away without a chance to commit (the member was dropped from the group), by default handled as revoked."""

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> object:
        return None

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> object:
        return None

    def on_partitions_lost(self, partitions: list[TopicPartition]) -> object:
        return self.on_partitions_revoked(partitions)


async def invoke(listener: ConsumerRebalanceListener | None, callback: str,
                 partitions: Sequence[TopicPartition]) -> Exception | None:
    """Call one of the listener's callbacks with the partitions (sorted); the exception it raised, if any (the caller
    finishes the rebalance first, then raises it, as Kafka's consumer does)."""
    log.info("%s: %s", callback.removeprefix("on_partitions_"), ", ".join(map(str, sorted(partitions))) or "(none)")
    if listener is None:
        return None
    try:
        outcome = getattr(listener, callback)(sorted(partitions))
        if inspect.isawaitable(outcome):
            await outcome
    except Exception as e:
        log.error("the rebalance listener failed in %s: %s", callback, e)
        return e
    return None
