"""`Notifications`: the sequential znodes others write for the controller.

- /isr_change_notification: a leader changed an ISR; re-read the named partitions' states, send UpdateMetadata,
  delete the notifications (Kafka's IsrChangeNotification).
- /config/changes: topic configs changed; a topic whose unclean.leader.election.enable turned on elects its offline
  partitions (Kafka's TopicUncleanLeaderElectionEnable). Notifications older than CHANGE_EXPIRATION_MS are purged.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import TYPE_CHECKING

from controller.context import TopicPartitionKey
from zk import znodes
from zk.client import DeleteOp, NoNodeError, RolledBackError, ZkError
from zk.topic_config import CHANGE_EXPIRATION_MS, TOPIC_ENTITY, config_change_sequence, decode_config_change

if TYPE_CHECKING:
    from controller.controller import KafkaController

log = logging.getLogger("controller")


class Notifications:
    """Processes ISR change and config change notifications."""

    def __init__(self, host: KafkaController) -> None:
        self._host = host
        self.last_config_change = -1  # sequence number of the newest /config/changes notification processed

    async def skip_config_changes_before_now(self) -> None:
        """Config changes made before this term are in the topic configs the term reads: start after them."""
        host = self._host
        sequences = [config_change_sequence(c) for c in await host.zk.get_children(znodes.CONFIG_CHANGES_PATH)]
        self.last_config_change = max((s for s in sequences if s is not None), default=-1)

    # -- ISR changes ------------------------------------------------------------------------

    async def process_isr_changes(self) -> list[TopicPartitionKey]:
        """ISR changes written by partition leaders: read the named partitions' states into the context, send
        them to every live broker in UpdateMetadata, delete the notifications. Returns the partitions named."""
        host = self._host
        if not host.is_active:
            return []
        names = [
            name
            for name in await host.zk.get_children(znodes.ISR_CHANGE_NOTIFICATION_PATH)
            if name.startswith(znodes.ISR_CHANGE_PREFIX)
        ]
        if not names:
            return []
        paths = [f"{znodes.ISR_CHANGE_NOTIFICATION_PATH}/{name}" for name in names]
        partitions: dict[TopicPartitionKey, None] = {}
        for path, got in zip(paths, await host.zk.get_many(paths), strict=True):
            if got is None:
                continue
            try:
                partitions.update(dict.fromkeys(znodes.decode_isr_change(got[0])))
            except znodes.ZkDataError as e:
                log.error("Controller %d ignores the ISR change notification %s: %s", host.broker_id, path, e)
        known = [(t, p) for t, p in partitions if p in host.context.assignments.get(t, {})]
        if known:
            await host.partition_states.read_partition_states(known)
            log.info("Controller %d: ISR changes of %s", host.broker_id, known)
            batch = host.new_batch()
            batch.add_update_metadata(host.context.live_brokers, host.context.partition_infos(known))
            host.send(batch)
        await self._delete_notifications(paths)
        return known

    async def _delete_notifications(self, paths: list[str]) -> None:
        """Delete processed ISR change notifications, fenced (as Kafka's deleteIsrChangeNotifications), in as
        few transactions as fit in a request."""
        store = self._host.store
        outcomes = await store.fenced_transactions([[DeleteOp(path)] for path in paths])
        for path, outcome in zip(paths, outcomes, strict=True):
            if isinstance(outcome, RolledBackError):  # another one went meanwhile: this one alone
                with contextlib.suppress(NoNodeError):
                    await store.fenced_multi([DeleteOp(path)])
            elif isinstance(outcome, ZkError) and not isinstance(outcome, NoNodeError):
                raise outcome

    # -- config changes ---------------------------------------------------------------------

    async def process_config_changes(self) -> None:
        """New /config/changes notifications: re-read the named topics' configs; a topic whose unclean leader
        election is now enabled elects its offline partitions. Old notifications are purged."""
        host = self._host
        if not host.is_active:
            return
        children = await host.zk.get_children(znodes.CONFIG_CHANGES_PATH)
        numbered = sorted((seq, name) for name in children if (seq := config_change_sequence(name)) is not None)
        topics: dict[str, None] = {}
        fresh = [(seq, name) for seq, name in numbered if seq > self.last_config_change]
        found = await host.zk.get_many([f"{znodes.CONFIG_CHANGES_PATH}/{name}" for _, name in fresh])
        for (seq, name), got in zip(fresh, found, strict=True):
            self.last_config_change = seq
            if got is None:
                continue
            try:
                entity_type, entity_name = decode_config_change(got[0])
            except znodes.ZkDataError as e:
                log.error("Controller %d ignores the config change notification %s: %s", host.broker_id, name, e)
                continue
            if entity_type == TOPIC_ENTITY:
                topics[entity_name] = None
        cache: dict[str, bool] = {}
        states = host.partition_states
        for topic in topics:
            if topic not in host.context.assignments or not await states.unclean_enabled(topic, cache):
                continue
            offline = host.context.offline_partitions([topic])
            log.info("Controller %d: unclean.leader.election.enable is on for topic %s; offline partitions %s",
                     host.broker_id, topic, offline)
            elected = await states.elect_offline_partitions(
                offline, f"unclean.leader.election.enable turned on for topic {topic}"
            )
            batch = host.new_batch()
            states.queue_changes(batch, elected)
            host.send(batch)
        if topics:
            await self._purge_config_changes([name for _, name in numbered])

    async def _purge_config_changes(self, names: list[str]) -> None:
        """Delete notifications older than CHANGE_EXPIRATION_MS (every reader has seen them by then)."""
        zk = self._host.zk
        now_ms = time.time() * 1000
        paths = [f"{znodes.CONFIG_CHANGES_PATH}/{name}" for name in names]
        for path, got in zip(paths, await zk.get_many(paths), strict=True):
            if got is not None and now_ms - got[1].ctime_ms > CHANGE_EXPIRATION_MS:
                with contextlib.suppress(NoNodeError):
                    await zk.delete(path)
