"""`TopicDeletionManager`: deletes the topics queued in /admin/delete_topics (Kafka's TopicDeletionManager).

With delete.topic.enable (the default), a topic queued for deletion (`DeleteTopics`, or a znode written by a tool)
goes as follows, once no reassignment of its partitions is in progress:

1. every live broker forgets it (UpdateMetadata with leader LEADER_DURING_DELETE): clients get
   UNKNOWN_TOPIC_OR_PARTITION from then on; leaders, followers and elections leave it alone;
2. its replicas go Offline, then ReplicaDeletionStarted: StopReplica with delete to their live brokers; a
   replica on a broker that is down is ReplicaDeletionIneligible;
3. once every live replica answered (ReplicaDeletionSuccessful), the topic's znodes are removed (fenced
   transactions, in an order the next controller can resume from: controller.zk_store), after recording the
   replicas left on brokers that are down in /admin/pending_replica_deletions/<broker>: those brokers delete them
   when they come back (StopReplica with delete and the topic id, sent before anything else they get), and the
   records go once they answered.

Unlike Kafka's ZooKeeper mode, a broker that is down does not hold the deletion up: the topic is gone (and can be
created again) once its live replicas are. Topic ids keep the incarnations apart: a pending deletion names the
topic id it was for, and a broker deletes a log only if it is of that incarnation. Without delete.topic.enable,
queued topics are removed from /admin/delete_topics and left alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from controller.activity import ControllerActivity
from controller.channel import BrokerRemovedError, ControllerBrokerRequestBatch
from controller.context import ControllerContext
from controller.event_manager import ControllerEventManager
from controller.replica_state_machine import Replica, ReplicaState, ReplicaStateMachine
from controller.request_sender import BrokerRequestSender
from controller.zk_store import ControllerZkStore
from protocol.apis.replica_control import LEADER_DURING_DELETE, StopReplicaResponse
from protocol.apis.topics import DeletableTopicResult, DeleteTopicsRequest, DeleteTopicsResponse
from protocol.errors import ErrorCode
from protocol.state_change import record_replica_state_change
from zk import znodes
from zk.client import CreateOp, NodeExistsError, ZkClient
from zk.znodes import PendingDeletion

log = logging.getLogger("controller")

_NOT_STARTED = (ReplicaState.NEW, ReplicaState.ONLINE, ReplicaState.OFFLINE, ReplicaState.DELETION_INELIGIBLE)

TopicWaiters = dict[str, asyncio.Future[None]]


class TopicDeletionManager:
    """Queues, deletes and completes topic deletions, and the deletions left to brokers that were down."""

    def __init__(self, context: ControllerContext, activity: ControllerActivity, zk: ZkClient,
                 store: ControllerZkStore, events: ControllerEventManager, requests: BrokerRequestSender,
                 replica_states: ReplicaStateMachine, *, enabled: bool) -> None:
        self._context = context
        self._activity = activity
        self._zk = zk
        self._store = store
        self._events = events
        self._requests = requests
        self._replica_states = replica_states
        self.enabled = enabled
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}

    def queued(self, topic: str) -> bool:
        return topic in self._context.topics_to_delete

    # -- DeleteTopics and /admin/delete_topics ----------------------------------------------

    async def handle_delete_topics(self, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
        """Queue topics for deletion and answer once they are gone, or after request.timeout_ms (then
        REQUEST_TIMED_OUT: they stay marked for deletion). TOPIC_DELETION_DISABLED without delete.topic.enable,
        NOT_CONTROLLER on a broker that is not the controller, UNKNOWN_TOPIC_OR_PARTITION for a missing topic."""

        def every(code: ErrorCode, message: str) -> DeleteTopicsResponse:
            return DeleteTopicsResponse(responses=[
                DeletableTopicResult(name=name, error_code=code, error_message=message) for name in request.topic_names
            ])

        if not self.enabled:
            return every(ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled (delete.topic.enable=false).")
        results, waiters = await self._activity.answer(
            "DeleteTopics", lambda: self.process_delete_topics(request.topic_names),
            lambda why: (every(ErrorCode.NOT_CONTROLLER, why).responses, {}))
        if waiters:
            done, _ = await asyncio.wait(waiters.values(), timeout=max(request.timeout_ms, 0) / 1000)
            for result in results:
                waiter = waiters.get(result.name)
                if waiter is not None and (waiter not in done or waiter.cancelled()):
                    result.error_code = ErrorCode.REQUEST_TIMED_OUT
                    result.error_message = (f"Topic '{result.name}' is marked for deletion; it was not gone within "
                                            f"{request.timeout_ms} ms")
        return DeleteTopicsResponse(responses=results)

    async def process_delete_topics(self, names: list[str]) -> tuple[list[DeletableTopicResult], TopicWaiters]:
        """Queue topics for deletion (writing /admin/delete_topics/<topic>, as Kafka's AdminManager); returns
        the results so far and, per queued topic, a future done when it is gone."""
        results: list[DeletableTopicResult] = []
        waiters: TopicWaiters = {}
        for name in dict.fromkeys(names):
            if name not in self._context.assignments:
                results.append(DeletableTopicResult(name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                    error_message=f"Topic '{name}' does not exist."))
                continue
            with contextlib.suppress(NodeExistsError):  # queued already
                await self._store.fenced_multi([CreateOp(znodes.delete_topic_path(name))])
            waiters[name] = future = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(name, []).append(future)
            results.append(DeletableTopicResult(name=name, error_code=ErrorCode.NONE))
        await self.enqueue(waiters)
        return results, waiters

    async def read_queued_topics(self) -> None:
        """At failover: the topics queued for deletion (before anything is elected or sent for them)."""
        self._context.pending_deletions = await self._store.read_pending_deletions()
        if self.enabled:
            queued = await self._zk.get_children(znodes.DELETE_TOPICS_PATH)
            self._context.topics_to_delete = {t for t in queued if t in self._context.assignments}

    async def process_delete_topics_znode(self) -> None:
        """/admin/delete_topics changed: queue its topics; drop entries of topics that do not exist (or all of
        them without delete.topic.enable)."""
        if not self._activity.is_active:
            return
        queued = await self._zk.get_children(znodes.DELETE_TOPICS_PATH)
        dropped = [t for t in queued if not self.enabled or t not in self._context.assignments]
        for topic in dropped:
            log.info("Controller %d removes %s from the topics to delete (%s)", self._activity.broker_id, topic,
                     "delete.topic.enable is false" if not self.enabled else "no such topic")
            await self._store.delete_if_exists(znodes.delete_topic_path(topic))
        await self.enqueue(t for t in queued if t not in dropped)

    async def enqueue(self, topics: Iterable[str]) -> None:
        new = set(topics) - self._context.topics_to_delete
        if new:
            log.info("Controller %d: topics queued for deletion: %s", self._activity.broker_id, sorted(new))
            self._context.topics_to_delete |= new
        await self.resume()

    # -- deleting ---------------------------------------------------------------------------

    async def resume(self) -> None:
        """Start (or retry) the deletion of every queued topic that is eligible, and complete those done."""
        context = self._context
        states = self._replica_states
        for topic in sorted(context.topics_to_delete):
            if any(tp.topic == topic for tp in context.reassignments):
                log.info("Controller %d: deletion of topic %s waits for its reassignment", self._activity.broker_id,
                         topic)
                continue
            # Every assigned replica takes part, also those of partitions without a state (never initialised, or
            # whose state an earlier controller deleted before failing half-way through): Kafka's
            # initializeReplicaState covers all partitions.
            states.initialize(context.partitions([topic]))
            replicas = states.replicas_on_any(context.partitions([topic]))
            live = [r for r in replicas if r[2] in context.live_brokers and states.state(r) in _NOT_STARTED]
            dead = [r for r in replicas if r[2] not in context.live_brokers and states.state(r) in _NOT_STARTED
                    and states.state(r) is not ReplicaState.DELETION_INELIGIBLE]
            if live or dead:
                self._start(topic, live, dead)
            await self._maybe_complete(topic)

    def _start(self, topic: str, live: list[Replica], dead: list[Replica]) -> None:
        """Tell every live broker to forget the topic and the live replicas' brokers to delete them; replicas on
        brokers that are down are ineligible for now."""
        context = self._context
        batch = self._requests.new_batch()
        batch.add_update_metadata(context.live_brokers, [
            (t, p, replace(state, leader=LEADER_DURING_DELETE), replicas)
            for t, p, state, replicas in context.partition_infos(context.partitions([topic]))
        ])
        self._replica_states.to_offline(None, live + dead)
        started = self._delete(batch, live + dead)
        log.info("Controller %d: deleting topic %s: replicas %s, on brokers that are down %s", self._activity.broker_id,
                 topic, started, dead)
        self.track(self._requests.send(batch).stop_replica, started)

    def _delete(self, batch: ControllerBrokerRequestBatch, replicas: list[Replica]) -> list[Replica]:
        """Offline replicas: those on live brokers are deleted (ReplicaDeletionStarted, StopReplica with delete
        queued on the batch), those on brokers that are down are ReplicaDeletionIneligible. Returns the first."""
        states = self._replica_states
        live = self._context.live_brokers
        states.to_deletion_ineligible([r for r in replicas if r[2] not in live])
        started = states.to_deletion_started(batch, [r for r in replicas if r[2] in live])
        for t, p, broker in started:
            self._log(t, p, broker, ReplicaState.DELETION_STARTED, "StopReplica with delete sent")
        return started

    async def remove_replicas(self, batch: ControllerBrokerRequestBatch, replicas: list[Replica]) -> list[Replica]:
        """Delete Offline replicas a reassignment removed: those on brokers that are down become pending
        deletions now; returns those started (give the sent batch's answers to `track`)."""
        started = self._delete(batch, replicas)
        await self._settle_removed([r for r in replicas if r not in started])
        return started

    def track(self, futures: dict[int, asyncio.Future[Any]], replicas: list[Replica]) -> None:
        """Process the StopReplica answers for these replicas as controller events of the stint that sent them
        (answers that come after this broker stopped acting as the controller, or started again, are ignored)."""
        stint = self._activity.stint
        for broker, future in futures.items():
            asked = [r for r in replicas if r[2] == broker]
            future.add_done_callback(lambda done, asked=asked: self._events.put(
                "StopReplicaResponse", lambda: self._on_deletion_answer(stint, asked, done)))

    async def _on_deletion_answer(self, sent_in: int, asked: list[Replica], answer: asyncio.Future[Any]) -> None:
        if not self._activity.acts_in(sent_in):
            return
        context = self._context
        states = self._replica_states
        started = states.in_state(asked, ReplicaState.DELETION_STARTED)
        error = answer.exception()
        if isinstance(error, BrokerRemovedError) and started and started[0][2] in context.live_brokers:
            # It bounced (a new registration) before answering: ask again.
            batch = self._requests.new_batch()
            for t, p, b in started:
                batch.add_stop_replica(b, t, p, -1, delete=True)
            self.track(self._requests.send(batch).stop_replica, started)
            return
        if error is not None:
            log.info("Controller %d: StopReplica (delete) of %s not answered: %s", self._activity.broker_id, started,
                     error)
            states.to_deletion_ineligible(started)
        else:
            response: StopReplicaResponse = answer.result()
            failed = {(e.topic, e.partition) for e in response.partition_errors if e.error_code != ErrorCode.NONE}
            states.to_deletion_ineligible([r for r in started if (r[0], r[1]) in failed])
            for t, p, b in states.to_deletion_successful([r for r in started if (r[0], r[1]) not in failed]):
                self._log(t, p, b, ReplicaState.DELETION_SUCCESSFUL, "replica deleted")
        for topic in sorted({r[0] for r in started}):
            if topic in context.topics_to_delete:
                await self._maybe_complete(topic)
            else:
                await self._settle_removed([r for r in started if r[0] == topic])

    async def _settle_removed(self, replicas: list[Replica]) -> None:
        """Replicas removed from their partition (not of a topic being deleted): deleted ones are NonExistent;
        those on brokers that are down are recorded as pending deletions first."""
        states = self._replica_states
        live = self._context.live_brokers
        states.to_non_existent(states.in_state(replicas, ReplicaState.DELETION_SUCCESSFUL))
        left = [r for r in states.in_state(replicas, ReplicaState.DELETION_INELIGIBLE) if r[2] not in live]
        for broker, records in self.add_pending(left).items():
            await self._store.write_pending_deletions(broker, records)
            self._context.pending_deletions[broker] = records
        for t, p, b in states.to_non_existent(left):
            self._log(t, p, b, ReplicaState.NON_EXISTENT, f"left to broker {b}, which deletes it when back")
        for t, p, b in states.in_state(replicas, ReplicaState.DELETION_INELIGIBLE):
            log.error("Controller %d: broker %d could not delete its replica of %s-%d", self._activity.broker_id, b,
                      t, p)

    async def on_brokers_failed(self, dead: list[int]) -> None:
        """Replicas of topics being deleted on brokers that died cannot be deleted now: they are left to those
        brokers, and the topics' deletions may complete."""
        states = self._replica_states
        context = self._context
        for topic in sorted(context.topics_to_delete):
            replicas = states.replicas_on(dead, context.partitions([topic]))
            if states.to_deletion_ineligible(states.in_state(replicas, ReplicaState.DELETION_STARTED)
                                             + states.in_state(replicas, ReplicaState.OFFLINE)):
                await self._maybe_complete(topic)

    async def _maybe_complete(self, topic: str) -> None:
        """Remove the topic once each replica is deleted or left to a broker that is down (Kafka's
        completeDeleteTopic, with pending deletions for those brokers)."""
        context = self._context
        states = self._replica_states
        replicas = states.replicas_on_any(context.partitions([topic]))
        left = [r for r in replicas if states.state(r) is ReplicaState.DELETION_INELIGIBLE
                and r[2] not in context.live_brokers]
        deleted = states.in_state(replicas, ReplicaState.DELETION_SUCCESSFUL)
        if len(left) + len(deleted) != len(replicas):
            return
        pending = self.add_pending(left)
        await self._store.delete_topic(topic, pending)
        context.pending_deletions.update(pending)
        for t, p, b in states.to_non_existent(replicas):
            if (t, p, b) in left:
                self._log(t, p, b, ReplicaState.NON_EXISTENT, f"left to broker {b}, which deletes it when back")
        for partition in context.assignments.pop(topic, {}):
            context.states.pop((topic, partition), None)
            context.reassignments.pop((topic, partition), None)
        context.topic_ids.pop(topic, None)
        context.topics_to_delete.discard(topic)
        log.info("Controller %d: topic %s deleted%s", self._activity.broker_id, topic,
                 f"; brokers {sorted(pending)} delete their replicas when back" if pending else "")
        for waiter in self._waiters.pop(topic, []):
            if not waiter.done():
                waiter.set_result(None)

    # -- pending deletions ------------------------------------------------------------------

    def send_pending_deletions(self, brokers: Iterable[int]) -> None:
        """Brokers that came back delete the replicas left to them (before they get anything else): those of
        deleted topics and those a reassignment removed, unless the replica is assigned to them again meanwhile
        (same topic incarnation)."""
        context = self._context
        batch = self._requests.new_batch()
        for broker in brokers:
            for record in sorted(context.pending_deletions.get(broker, ())):
                if not self._still_wanted(broker, record):
                    batch.add_stop_replica(broker, record.topic, record.partition, -1, delete=True,
                                           topic_id=record.topic_id or "")
        stint = self._activity.stint
        for broker, future in self._requests.send(batch).stop_replica.items():
            future.add_done_callback(lambda done, b=broker: self._events.put(
                "PendingDeletionsDone", lambda: self._on_pending_answer(stint, b, done)))

    def _still_wanted(self, broker: int, record: PendingDeletion) -> bool:
        context = self._context
        assigned = context.assignments.get(record.topic, {}).get(record.partition, [])
        return broker in assigned and record.topic_id in (None, context.topic_ids.get(record.topic))

    async def _on_pending_answer(self, sent_in: int, broker: int, answer: asyncio.Future[Any]) -> None:
        if not self._activity.acts_in(sent_in) or answer.exception() is not None:
            return  # retried when the broker comes back next, or by the next controller
        context = self._context
        remaining = {r for r in context.pending_deletions.get(broker, ()) if self._still_wanted(broker, r)}
        done = context.pending_deletions.get(broker, set()) - remaining
        await self._store.write_pending_deletions(broker, remaining)
        context.pending_deletions[broker] = remaining
        for record in sorted(done):
            self._log(record.topic, record.partition, broker, ReplicaState.NON_EXISTENT,
                      "pending deletion done by the broker, back")

    def add_pending(self, replicas: Iterable[Replica]) -> dict[int, set[PendingDeletion]]:
        """The pending deletions with these replicas (on brokers that are down) added, by broker."""
        context = self._context
        pending: dict[int, set[PendingDeletion]] = {}
        for topic, partition, broker in replicas:
            pending.setdefault(broker, set(context.pending_deletions.get(broker, ()))).add(
                PendingDeletion(topic, partition, context.topic_ids.get(topic)))
        return pending

    def fail_waiters(self) -> None:
        """This broker stopped being the controller: DeleteTopics requests waiting here give up."""
        for waiters in self._waiters.values():
            for waiter in waiters:
                if not waiter.done():
                    waiter.cancel()
        self._waiters.clear()

    def _log(self, topic: str, partition: int, broker: int, state: ReplicaState, reason: str) -> None:
        record_replica_state_change(source="controller", broker_id=self._activity.broker_id, topic=topic,
                                    partition=partition, replica=broker, state=state.value, reason=reason)
