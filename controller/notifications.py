"""`Notifications`: the sequential znodes others write for the controller.

- /isr_change_notification: a leader changed an ISR; re-read the named partitions' states, send UpdateMetadata,
  delete the notifications (Kafka's IsrChangeNotification).
- /config/changes: topic configs changed; a topic whose unclean.leader.election.enable turned on elects its offline
  partitions (Kafka's TopicUncleanLeaderElectionEnable). Brokers' dynamic configs changed: the controller's broker
  default of unclean.leader.election.enable is its own dynamic config over the cluster's (/config/brokers), over its
  server.properties; turned on, every offline partition is elected where its topic allows it (Kafka's
  UncleanLeaderElectionEnable). Notifications older than CHANGE_EXPIRATION_MS are purged.
"""

from __future__ import annotations

import contextlib
import logging

from controller.activity import ControllerActivity
from controller.context import ControllerContext
from controller.election import UNCLEAN_LEADER_ELECTION_ENABLE
from controller.partition_state_machine import PartitionStateMachine
from controller.request_sender import BrokerRequestSender
from controller.zk_store import ControllerZkStore
from protocol.topic_partition import TopicPartition
from zk import znodes
from zk.client import DeleteOp, NoNodeError, RolledBackError, ZkClient, ZkError
from zk.topic_config import (
    BROKER_ENTITY,
    DEFAULT_BROKER,
    TOPIC_ENTITY,
    config_change_sequence,
    new_config_changes,
    purge_expired_changes,
    read_entity_config,
)

log = logging.getLogger("controller")


class Notifications:
    """Processes ISR change and config change notifications."""

    def __init__(self, context: ControllerContext, activity: ControllerActivity, zk: ZkClient,
                 store: ControllerZkStore, requests: BrokerRequestSender,
                 partition_states: PartitionStateMachine) -> None:
        self._context = context
        self._activity = activity
        self._zk = zk
        self._store = store
        self._requests = requests
        self._partition_states = partition_states
        self.last_config_change = -1  # sequence number of the newest /config/changes notification processed

    async def skip_config_changes_before_now(self) -> None:
        """Config changes made before this term are in the configs the term reads (the topics', and the brokers'
        dynamic ones read now): start after them."""
        sequences = [config_change_sequence(c) for c in await self._zk.get_children(znodes.CONFIG_CHANGES_PATH)]
        self.last_config_change = max((s for s in sequences if s is not None), default=-1)
        await self._read_unclean_leader_election_default()

    async def _read_unclean_leader_election_default(self) -> bool:
        """unclean.leader.election.enable for topics without an override: this broker's dynamic config, else the
        cluster's dynamic default, else server.properties'. Whether it turned on."""
        states = self._partition_states
        try:
            dynamic = {**await read_entity_config(self._zk, BROKER_ENTITY, DEFAULT_BROKER),
                       **await read_entity_config(self._zk, BROKER_ENTITY, str(self._activity.broker_id))}
        except znodes.ZkDataError as e:
            log.error("Controller %d cannot read the brokers' dynamic configs: %s", self._activity.broker_id, e)
            return False
        value = dynamic.get(UNCLEAN_LEADER_ELECTION_ENABLE)
        enabled = states.static_unclean_leader_election if value is None else value.strip().lower() == "true"
        turned_on = enabled and not states.unclean_leader_election_default
        states.unclean_leader_election_default = enabled
        return turned_on

    # -- ISR changes ------------------------------------------------------------------------

    async def process_isr_changes(self) -> list[TopicPartition]:
        """ISR changes written by partition leaders: read the named partitions' states into the context, send
        them to every live broker in UpdateMetadata, delete the notifications. Returns the partitions named."""
        if not self._activity.is_active:
            return []
        names = [
            name
            for name in await self._zk.get_children(znodes.ISR_CHANGE_NOTIFICATION_PATH)
            if name.startswith(znodes.ISR_CHANGE_PREFIX)
        ]
        if not names:
            return []
        paths = [f"{znodes.ISR_CHANGE_NOTIFICATION_PATH}/{name}" for name in names]
        partitions: dict[tuple[str, int], None] = {}
        for path, got in zip(paths, await self._zk.get_many(paths), strict=True):
            if got is None:
                continue
            try:
                partitions.update(dict.fromkeys(znodes.decode_isr_change(got[0])))
            except znodes.ZkDataError as e:
                log.error("Controller %d ignores the ISR change notification %s: %s", self._activity.broker_id, path, e)
        known = [TopicPartition(t, p) for t, p in partitions if p in self._context.assignments.get(t, {})]
        if known:
            await self._partition_states.read_partition_states(known)
            log.info("Controller %d: ISR changes of %s", self._activity.broker_id, known)
            batch = self._requests.new_batch()
            batch.add_update_metadata(self._context.live_brokers, self._context.partition_infos(known))
            self._requests.send(batch)
        await self._delete_notifications(paths)
        return known

    async def _delete_notifications(self, paths: list[str]) -> None:
        """Delete processed ISR change notifications, fenced (as Kafka's deleteIsrChangeNotifications), in as
        few transactions as fit in a request."""
        store = self._store
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
        election is now enabled elects its offline partitions. Old notifications (of any entity) are purged."""
        if not self._activity.is_active:
            return
        self.last_config_change, entities = await new_config_changes(self._zk, self.last_config_change)
        topics = dict.fromkeys(name for kind, name in entities if kind == TOPIC_ENTITY)
        cache: dict[str, bool] = {}
        states = self._partition_states
        ours = (DEFAULT_BROKER, str(self._activity.broker_id))
        if (any(kind == BROKER_ENTITY and name in ours for kind, name in entities)
                and await self._read_unclean_leader_election_default()):
            offline = self._context.offline_partitions()
            log.info("Controller %d: unclean.leader.election.enable is on for the brokers; offline partitions %s",
                     self._activity.broker_id, offline)
            elected = await states.elect_offline_partitions(
                offline, "unclean.leader.election.enable turned on for the brokers")
            batch = self._requests.new_batch()
            states.queue_changes(batch, elected)
            self._requests.send(batch)
        for topic in topics:
            if topic not in self._context.assignments or not await states.unclean_enabled(topic, cache):
                continue
            offline = self._context.offline_partitions([topic])
            log.info("Controller %d: unclean.leader.election.enable is on for topic %s; offline partitions %s",
                     self._activity.broker_id, topic, offline)
            elected = await states.elect_offline_partitions(
                offline, f"unclean.leader.election.enable turned on for topic {topic}"
            )
            batch = self._requests.new_batch()
            states.queue_changes(batch, elected)
            self._requests.send(batch)
        if entities:
            names = await self._zk.get_children(znodes.CONFIG_CHANGES_PATH)
            await purge_expired_changes(self._zk, znodes.CONFIG_CHANGES_PATH,
                                        [name for name in names if config_change_sequence(name) is not None])

