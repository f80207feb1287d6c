"""What the coordinator's rules share: the settings, the injected clock and member-id source, the groups, the timers
armed and the appends in flight, and the effects of the call being handled."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from broker.coordinator.group.config import GroupConfig
from broker.coordinator.group.effects import Append, Effects, ParkedResult, Record, Reply, TimerKey
from broker.coordinator.group.group import Group
from protocol.consumer_offsets import partition_for
from protocol.errors import ErrorCode

Clock = Callable[[], int]
AppendDone = Callable[[ErrorCode], None]


class Context:
    """Shared by the rules of one coordinator; ``begin()`` starts a call's effects."""

    def __init__(self, config: GroupConfig, clock: Clock, new_uuid: Callable[[], str]) -> None:
        self.config = config
        self.clock = clock
        self.new_uuid = new_uuid
        self.fx = Effects()
        self.groups: dict[str, Group] = {}
        self.deadlines: dict[TimerKey, int] = {}
        self._appends_in_flight: dict[int, AppendDone | None] = {}
        self._next_append_id = 0

    def begin(self) -> Effects:
        self.fx = Effects()
        return self.fx

    def now(self) -> int:
        return self.clock()

    def reply(self, to: object, result: ParkedResult) -> None:
        self.fx.replies.append(Reply(to, result))

    # ------------------------------------------------------------------------------------------ timers

    def arm(self, key: TimerKey, delay_ms: int) -> None:
        self.fx.timers[key] = delay_ms
        self.deadlines[key] = self.now() + delay_ms

    def cancel(self, key: TimerKey) -> None:
        if self.deadlines.pop(key, None) is not None:
            self.fx.timers[key] = None

    def take_fired(self, key: TimerKey) -> bool:
        """Whether `key` was armed (it no longer is); a key fired after its cancellation is ignored."""
        return self.deadlines.pop(key, None) is not None

    # ------------------------------------------------------------------------------------------ appends

    def append(self, group_id: str, records: Iterable[Record], on_done: AppendDone | None = None) -> None:
        """Append `records` to the group's partition of __consumer_offsets; `on_done(error)` runs when it is done."""
        self._next_append_id += 1
        partition = partition_for(group_id, self.config.offsets_topic_partitions)
        self.fx.appends.append(Append(self._next_append_id, partition, tuple(records)))
        self._appends_in_flight[self._next_append_id] = on_done

    def appended(self, append_id: int, error: ErrorCode) -> None:
        on_done = self._appends_in_flight.pop(append_id, None)
        if on_done is not None:
            on_done(error)

