"""Where kafka-consumer-groups --reset-offsets moves a group's offsets, pure: the scenarios (--to-earliest,
--to-latest, --to-offset N, --shift-by N, --to-datetime), their clamping into each partition's log, and the
datetime format (Kafka's Utils.getDateTime)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum

from protocol.topic_partition import TopicPartition

_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}(?P<zone>Z|[+-]\d{2}(:?\d{2})?)?")
NO_OFFSET = -1


class ResetTo(Enum):
    """A reset scenario; those with a value (an offset, a shift, a time in ms) take it from the command line."""

    EARLIEST = "to-earliest"
    LATEST = "to-latest"
    OFFSET = "to-offset"
    SHIFT_BY = "shift-by"
    DATETIME = "to-datetime"


@dataclass(frozen=True, slots=True)
class ResetPlan:
    """The new offset of each partition, and the warnings to show (offsets clamped, empty partitions)."""

    offsets: dict[TopicPartition, int]
    warnings: list[str] = field(default_factory=list)


def parse_datetime(text: str) -> int:
    """A --to-datetime value ('YYYY-MM-DDTHH:mm:SS.sss', optionally with a zone: Z, +hh, +hhmm or +hh:mm; UTC if
    none) as ms since the epoch; ValueError if it is not one."""
    match = _DATETIME.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a datetime of the form YYYY-MM-DDTHH:mm:SS.sss[zone]")
    zone = match.group("zone")
    if zone is None:
        text = text.strip() + "Z"
    elif len(zone) == 3:
        text = text.strip() + "00"
    moment = datetime.fromisoformat(text.strip())
    return round(moment.astimezone(UTC).timestamp() * 1000)


def parse_topic_partitions(argument: str, partition_counts: Mapping[str, int]) -> list[TopicPartition]:
    """A --topic value: TOPIC (all its partitions, from `partition_counts`) or TOPIC:P,P,... ; ValueError if it is
    neither."""
    topic, colon, partitions = argument.partition(":")
    if not colon:
        return [TopicPartition(topic, p) for p in range(partition_counts.get(topic, 0))]
    if not topic or ":" in partitions:
        raise ValueError(f"invalid topic argument {argument!r}, expected TOPIC or TOPIC:PARTITION,...")
    try:
        return [TopicPartition(topic, int(p)) for p in partitions.split(",")]
    except ValueError:
        raise ValueError(f"invalid partition in topic argument {argument!r}") from None


def plan_reset(partitions: Sequence[TopicPartition], scenario: ResetTo, value: int | None, *,
               committed: Mapping[TopicPartition, int], log_starts: Mapping[TopicPartition, int],
               log_ends: Mapping[TopicPartition, int], by_time: Mapping[TopicPartition, int] | None = None
               ) -> ResetPlan:
    """The new offsets, as kafka-consumer-groups computes them: log starts or ends; an offset, or a shift of the
    committed offset (ValueError for a partition without one), clamped into [log start, log end]; the offset of
    the time (`by_time`; a partition without a record since falls back to its log end)."""
    warnings: list[str] = []
    if scenario is ResetTo.EARLIEST:
        return ResetPlan({tp: log_starts[tp] for tp in partitions})
    if scenario is ResetTo.LATEST:
        return ResetPlan({tp: log_ends[tp] for tp in partitions})
    if scenario is ResetTo.DATETIME:
        assert by_time is not None
        offsets = {}
        for tp in partitions:
            offset = by_time.get(tp, NO_OFFSET)
            if offset == NO_OFFSET:
                warnings.append(f"Partition {tp.partition} from topic {tp.topic} is empty. Falling back to latest "
                                f"known offset.")
                offset = log_ends[tp]
            offsets[tp] = offset
        return ResetPlan(offsets, warnings)
    assert value is not None
    requested = {}
    for tp in partitions:
        if scenario is ResetTo.OFFSET:
            requested[tp] = value
        elif tp not in committed:
            raise ValueError(f"Cannot shift offset for partition {tp} since there is no current committed offset")
        else:
            requested[tp] = committed[tp] + value
    return ResetPlan({tp: _clamped(tp, offset, log_starts[tp], log_ends[tp], warnings)
                      for tp, offset in requested.items()}, warnings)


def _clamped(tp: TopicPartition, offset: int, start: int, end: int, warnings: list[str]) -> int:
    if offset > end:
        warnings.append(f"New offset ({offset}) is higher than latest offset for topic partition {tp}. Value will "
                        f"be set to {end}")
        return end
    if offset < start:
        warnings.append(f"New offset ({offset}) is lower than earliest offset for topic partition {tp}. Value will "
                        f"be set to {start}")
        return start
    return offset
