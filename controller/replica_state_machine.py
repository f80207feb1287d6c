"""`ReplicaStateMachine`: the state of every replica (a partition on a broker) as the controller sees it
(Kafka's ReplicaStateMachine).

States and the transitions Kafka allows into each:

    NewReplica                  <- NonExistentReplica
    OnlineReplica               <- NewReplica, OnlineReplica, OfflineReplica, ReplicaDeletionIneligible
    OfflineReplica              <- NewReplica, OnlineReplica, OfflineReplica, ReplicaDeletionIneligible
    ReplicaDeletionStarted      <- OfflineReplica
    ReplicaDeletionSuccessful   <- ReplicaDeletionStarted
    ReplicaDeletionIneligible   <- OfflineReplica, ReplicaDeletionStarted
    NonExistentReplica          <- ReplicaDeletionSuccessful, ReplicaDeletionIneligible

A transition that is not allowed is logged and skipped. Entering OnlineReplica sends the replica its partition's
state (LeaderAndIsr); entering OfflineReplica on a live broker may stop it (StopReplica without delete);
entering ReplicaDeletionStarted deletes it (StopReplica with delete). Requests are queued on the caller's batch.
Unlike Kafka, a replica whose deletion cannot start because its broker is down goes from
ReplicaDeletionIneligible to NonExistentReplica once recorded as a pending deletion: its broker deletes it when it
comes back (controller.topic_deletion).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable

from controller.channel import ControllerBrokerRequestBatch
from controller.context import ControllerContext
from protocol.topic_partition import TopicPartition

log = logging.getLogger("controller")

Replica = tuple[str, int, int]  # (topic, partition, broker id)


class ReplicaState(enum.Enum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"


_VALID_PREVIOUS: dict[ReplicaState, frozenset[ReplicaState]] = {
    ReplicaState.NEW: frozenset({ReplicaState.NON_EXISTENT}),
    ReplicaState.ONLINE: frozenset({ReplicaState.NEW, ReplicaState.ONLINE, ReplicaState.OFFLINE,
                                    ReplicaState.DELETION_INELIGIBLE}),
    ReplicaState.OFFLINE: frozenset({ReplicaState.NEW, ReplicaState.ONLINE, ReplicaState.OFFLINE,
                                     ReplicaState.DELETION_INELIGIBLE}),
    ReplicaState.DELETION_STARTED: frozenset({ReplicaState.OFFLINE}),
    ReplicaState.DELETION_SUCCESSFUL: frozenset({ReplicaState.DELETION_STARTED}),
    ReplicaState.DELETION_INELIGIBLE: frozenset({ReplicaState.OFFLINE, ReplicaState.DELETION_STARTED}),
    ReplicaState.NON_EXISTENT: frozenset({ReplicaState.DELETION_SUCCESSFUL, ReplicaState.DELETION_INELIGIBLE}),
}


class ReplicaStateMachine:
    """Tracks each replica's state and queues the requests its transitions need."""

    def __init__(self, context: ControllerContext, broker_id: int) -> None:
        self._context = context
        self._broker_id = broker_id
        self.states: dict[Replica, ReplicaState] = {}

    def reset(self) -> None:
        self.states = {}

    def state(self, replica: Replica) -> ReplicaState:
        return self.states.get(replica, ReplicaState.NON_EXISTENT)

    def initialize(self, partitions: Iterable[TopicPartition]) -> None:
        """Replicas of partitions that exist already (read from ZooKeeper) are Online if their broker is live,
        else Offline (Kafka's initializeReplicaState)."""
        live = self._context.live_brokers
        for replica in self.replicas_on_any(partitions):
            self.states.setdefault(replica, ReplicaState.ONLINE if replica[2] in live else ReplicaState.OFFLINE)

    def start_new(self, partitions: Iterable[TopicPartition]) -> None:
        """The replicas of new partitions: NonExistent -> New -> Online (Offline on a broker that is down).
        The partition's first LeaderAndIsr (is_new) is what starts them."""
        live = self._context.live_brokers
        for replica in self._enter(self.replicas_on_any(partitions), ReplicaState.NEW):
            self._enter([replica], ReplicaState.ONLINE if replica[2] in live else ReplicaState.OFFLINE)

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """The partitions are gone: their replicas are NonExistent."""
        for replica in self.replicas_on_any(partitions):
            self.states.pop(replica, None)

    def replicas_on_any(self, partitions: Iterable[TopicPartition]) -> list[Replica]:
        """Every replica of the partitions."""
        context = self._context
        return [(t, p, b) for t, p in partitions for b in context.replicas(t, p)]

    def replicas_on(self, brokers: Iterable[int], partitions: Iterable[TopicPartition] | None = None) -> list[Replica]:
        """The replicas the brokers host (of `partitions`, or of every partition)."""
        wanted = set(brokers)
        chosen = self._context.partitions() if partitions is None else partitions
        return [replica for replica in self.replicas_on_any(chosen) if replica[2] in wanted]

    def _enter(self, replicas: Iterable[Replica], target: ReplicaState) -> list[Replica]:
        """Move replicas into `target` where allowed; returns those moved."""
        moved = []
        for replica in replicas:
            current = self.state(replica)
            if current not in _VALID_PREVIOUS[target]:
                log.error("Controller %d: replica %s-%d on broker %d cannot go from %s to %s",
                          self._broker_id, *replica, current.value, target.value)
                continue
            self.states[replica] = target
            moved.append(replica)
        return moved

    def to_new(self, replicas: Iterable[Replica]) -> list[Replica]:
        return self._enter(replicas, ReplicaState.NEW)

    def to_online(self, batch: ControllerBrokerRequestBatch | None, replicas: Iterable[Replica]) -> list[Replica]:
        """Online: each replica gets its partition's current state (LeaderAndIsr), if the partition has one, when
        a batch is given."""
        context = self._context
        moved = self._enter(replicas, ReplicaState.ONLINE)
        for topic, partition, broker in moved if batch is not None else ():
            state = context.states.get((topic, partition))
            if state is not None:
                batch.add_leader_and_isr([broker], topic, partition, state, context.replicas(topic, partition))
        return moved

    def in_state(self, replicas: Iterable[Replica], state: ReplicaState) -> list[Replica]:
        return [replica for replica in replicas if self.state(replica) is state]

    def to_deletion_started(self, batch: ControllerBrokerRequestBatch, replicas: Iterable[Replica]) -> list[Replica]:
        """ReplicaDeletionStarted: each replica's broker is told to stop and delete it (StopReplica, delete)."""
        moved = self._enter(replicas, ReplicaState.DELETION_STARTED)
        for topic, partition, broker in moved:
            batch.add_stop_replica(broker, topic, partition, -1, delete=True)
        return moved

    def to_deletion_successful(self, replicas: Iterable[Replica]) -> list[Replica]:
        return self._enter(replicas, ReplicaState.DELETION_SUCCESSFUL)

    def to_deletion_ineligible(self, replicas: Iterable[Replica]) -> list[Replica]:
        return self._enter(replicas, ReplicaState.DELETION_INELIGIBLE)

    def to_non_existent(self, replicas: Iterable[Replica]) -> list[Replica]:
        moved = self._enter(replicas, ReplicaState.NON_EXISTENT)
        for replica in moved:
            del self.states[replica]
        return moved

    def to_offline(self, batch: ControllerBrokerRequestBatch | None, replicas: Iterable[Replica]) -> list[Replica]:
        """Offline: a replica on a live broker is stopped (StopReplica without delete) when a batch is given.
        Leaving the ISR is the partition state machine's part (it decides all changes of a partition at once)."""
        context = self._context
        moved = self._enter(replicas, ReplicaState.OFFLINE)
        if batch is not None:
            for topic, partition, broker in moved:
                state = context.states.get((topic, partition))
                epoch = state.leader_epoch if state is not None else -1
                batch.add_stop_replica(broker, topic, partition, epoch, delete=False)
        return moved
