"""Incremental fetch sessions (Kafka's KIP-227), both halves: the leader's session cache and the follower's builder.

A follower that fetches thousands of partitions from one leader would otherwise send all of them in every
request and get all of them back, every replica.fetch.wait.max.ms, even when nothing happens. In a session the
leader remembers the partitions and their fetch offsets: a request carries only the partitions whose fetch offset,
log start or leader epoch changed since the last one (and those to forget), and a response only the partitions
with records, a new high watermark or log start offset, or an error.

Epochs, as in Kafka: a request with session id 0 and epoch 0 opens a session (a full request; the response names
the new session id); session id S with epoch N (N >= 1, the session's next epoch) is an incremental request;
epoch -1 asks for a full fetch outside any session (and closes session S if one is named). Consumers use -1.

Pure: no asyncio, no sockets; the clock is injected.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from protocol.apis.fetch import FetchPartition, FetchPartitionResponse, FetchRequest
from protocol.errors import ErrorCode, KafkaError
from protocol.topic_partition import TopicPartition

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
NO_SESSION = 0
_MAX_EPOCH = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (wrapping to 1, never back to the initial epoch 0)."""
    if epoch < 0:
        return epoch
    return 1 if epoch == _MAX_EPOCH else epoch + 1


@dataclass(slots=True)
class SessionPartition:
    """What the leader remembers of one partition of a session."""

    fetch_offset: int
    current_leader_epoch: int
    log_start_offset: int
    max_bytes: int
    last_fetched_epoch: int = -1
    reported_high_watermark: int = -2
    reported_log_start_offset: int = -2

    def update(self, wanted: FetchPartition) -> None:
        self.fetch_offset = wanted.fetch_offset
        self.current_leader_epoch = wanted.current_leader_epoch
        self.log_start_offset = wanted.log_start_offset
        self.max_bytes = wanted.partition_max_bytes
        self.last_fetched_epoch = wanted.last_fetched_epoch


def _session_partition(wanted: FetchPartition) -> SessionPartition:
    return SessionPartition(wanted.fetch_offset, wanted.current_leader_epoch, wanted.log_start_offset,
                            wanted.partition_max_bytes, wanted.last_fetched_epoch)


def _requested(request: FetchRequest) -> Iterable[tuple[TopicPartition, FetchPartition]]:
    for topic in request.topics:
        for wanted in topic.partitions:
            yield TopicPartition(topic.name, wanted.partition), wanted


@dataclass(slots=True)
class FetchSession:
    """One follower's session on the leader."""

    id: int
    replica_id: int
    epoch: int
    partitions: dict[TopicPartition, SessionPartition]
    last_used_ms: int


class FetchContext:
    """The partitions one fetch reads, and which of the results its response carries."""

    def __init__(self, partitions: dict[TopicPartition, SessionPartition], session_id: int, incremental: bool) -> None:
        self.partitions = partitions
        self.session_id = session_id
        self._incremental = incremental

    def reported(self, results: Iterable[tuple[TopicPartition, FetchPartitionResponse]]) \
            -> list[tuple[TopicPartition, FetchPartitionResponse]]:
        """The results the response carries, remembering what the follower has now been told. Call it once,
        on the response that is sent."""
        kept = []
        for tp, result in results:
            cached = self.partitions.get(tp)
            changed = (result.records or result.error_code != ErrorCode.NONE or cached is None
                       or result.diverging_epoch is not None
                       or cached.reported_high_watermark != result.high_watermark
                       or cached.reported_log_start_offset != result.log_start_offset)
            if cached is not None:
                cached.reported_high_watermark = result.high_watermark
                cached.reported_log_start_offset = result.log_start_offset
            if changed or not self._incremental:
                kept.append((tp, result))
        return kept


class FetchSessionCache:
    """The leader's sessions: at most ``max_sessions`` (the least recently used goes first), and none idle for
    longer than ``idle_ms``."""

    def __init__(self, max_sessions: int, idle_ms: int, clock: Callable[[], int]) -> None:
        self.max_sessions = max_sessions
        self.idle_ms = idle_ms
        self._clock = clock
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._sessions)

    def context(self, request: FetchRequest) -> FetchContext:
        """The context of a fetch; KafkaError FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH when the
        request names a session this cache does not have, or not at its next epoch."""
        now = self._clock()
        self._expire(now)
        session_id, epoch = request.session_id, request.session_epoch
        full = {tp: _session_partition(wanted) for tp, wanted in _requested(request)}
        if epoch == FINAL_EPOCH:
            self._sessions.pop(session_id, None)
            return FetchContext(full, NO_SESSION, incremental=False)
        if session_id == NO_SESSION:
            if epoch != INITIAL_EPOCH:
                raise KafkaError(ErrorCode.INVALID_FETCH_SESSION_EPOCH, f"a new session starts at epoch 0, not {epoch}")
            if request.replica_id < 0 or self.max_sessions <= 0:
                return FetchContext(full, NO_SESSION, incremental=False)
            session = FetchSession(next(self._ids), request.replica_id, next_epoch(INITIAL_EPOCH), full, now)
            self._sessions[session.id] = session
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
            return FetchContext(session.partitions, session.id, incremental=False)
        session = self._sessions.get(session_id)
        if session is None or session.replica_id != request.replica_id:
            raise KafkaError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, f"no fetch session {session_id}")
        if epoch != session.epoch:
            raise KafkaError(ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                             f"fetch session {session_id} expected epoch {session.epoch}, got {epoch}")
        for tp, wanted in _requested(request):
            cached = session.partitions.get(tp)
            if cached is None:
                session.partitions[tp] = _session_partition(wanted)
            else:
                cached.update(wanted)
        for forgotten in request.forgotten_topics:
            for partition in forgotten.partitions:
                session.partitions.pop(TopicPartition(forgotten.name, partition), None)
        session.epoch = next_epoch(session.epoch)
        session.last_used_ms = now
        self._sessions.move_to_end(session.id)
        return FetchContext(session.partitions, session.id, incremental=True)

    def _expire(self, now: int) -> None:
        while self._sessions:
            oldest = next(iter(self._sessions.values()))
            if now - oldest.last_used_ms <= self.idle_ms:
                return
            self._sessions.popitem(last=False)


class FetchSessionBuilder:
    """The follower's half: which partitions the next request to one leader carries, and in which session."""

    def __init__(self) -> None:
        self.session_id = NO_SESSION
        self.epoch = INITIAL_EPOCH
        self._sent: dict[TopicPartition, FetchPartition] = {}
        self._pending: dict[TopicPartition, FetchPartition] = {}

    def build(self, wanted: dict[TopicPartition, FetchPartition]) \
            -> tuple[list[tuple[TopicPartition, FetchPartition]], list[TopicPartition]]:
        """(partitions to send, partitions to forget) for a request wanting exactly ``wanted``."""
        self._pending = dict(wanted)
        if self.session_id == NO_SESSION:
            return list(wanted.items()), []
        send = [(tp, fetch) for tp, fetch in wanted.items() if self._sent.get(tp) != fetch]
        forget = [tp for tp in self._sent if tp not in wanted]
        return send, forget

    def on_response(self, error_code: int, session_id: int) -> None:
        """After a response: continue the session, or start over with a full request."""
        if error_code in (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH):
            self.reset()
            return
        if self.session_id == NO_SESSION:
            self.session_id = session_id
        self._sent = self._pending
        self.epoch = next_epoch(self.epoch) if self.session_id != NO_SESSION else INITIAL_EPOCH

    def reset(self) -> None:
        """Forget the session (after a failed request or a new connection): the next request is full."""
        self.session_id, self.epoch = NO_SESSION, INITIAL_EPOCH
        self._sent, self._pending = {}, {}
