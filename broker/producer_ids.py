"""Producer ids for InitProducerId, handed out from blocks reserved in ZooKeeper (Kafka's ZkProducerIdManager).

Each broker reserves a block of 1000 ids at a time by a conditional write of /latest_producer_id_block, so ids are
unique across the cluster and across restarts (a restarted broker reserves a new block; unused ids are skipped).
"""

from __future__ import annotations

import asyncio
import logging

from zk import znodes
from zk.client import BadVersionError, NodeExistsError, ZkClient

log = logging.getLogger(__name__)


class ProducerIdManager:
    """Hands out producer ids, reserving a new block whenever the current one is used up."""

    def __init__(self, zk: ZkClient, broker_id: int) -> None:
        self._zk = zk
        self._broker_id = broker_id
        self._block: znodes.ProducerIdBlock | None = None
        self._next = 0
        self._lock = asyncio.Lock()

    async def generate_producer_id(self) -> int:
        """A producer id no one was given before."""
        async with self._lock:
            if self._block is None or self._next > self._block.last:
                self._block = await self._reserve_block()
                self._next = self._block.first
            producer_id = self._next
            self._next += 1
            return producer_id

    async def _reserve_block(self) -> znodes.ProducerIdBlock:
        path = znodes.PRODUCER_ID_BLOCK_PATH
        while True:
            found = await self._zk.get_or_none(path)
            current = znodes.decode_producer_id_block(found[0]) if found is not None else None
            block = znodes.next_producer_id_block(current, self._broker_id)
            try:
                if found is None:
                    await self._zk.create(path, znodes.encode_producer_id_block(block))
                else:
                    await self._zk.set(path, znodes.encode_producer_id_block(block), version=found[1].version)
            except (BadVersionError, NodeExistsError):
                continue  # another broker reserved a block meanwhile: take the one after it
            log.info("broker %d reserved producer ids %d..%d", self._broker_id, block.first, block.last)
            return block
