"""Partition assignors, pure: how a group's leader shares the partitions of the subscribed topics among the members
(Kafka's, by their protocol names): range, roundrobin, sticky and cooperative-sticky. `assignors` builds them from
partition.assignment.strategy."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from client.assignors.base import Assignor
from client.assignors.range import RANGE, RangeAssignor
from client.assignors.roundrobin import ROUNDROBIN, RoundRobinAssignor
from client.assignors.sticky import COOPERATIVE_STICKY, STICKY, CooperativeStickyAssignor, StickyAssignor

#: Each assignor by its protocol name.
ASSIGNORS: dict[str, Callable[[], Assignor]] = {
    RANGE: RangeAssignor,
    ROUNDROBIN: RoundRobinAssignor,
    STICKY: StickyAssignor,
    COOPERATIVE_STICKY: CooperativeStickyAssignor,
}
#: Kafka's class names in partition.assignment.strategy, and the protocol names they stand for.
KAFKA_CLASS_NAMES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": RANGE,
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": ROUNDROBIN,
    "org.apache.kafka.clients.consumer.StickyAssignor": STICKY,
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": COOPERATIVE_STICKY,
}
#: Kafka's default partition.assignment.strategy, by protocol names (range chosen while every member offers it).
DEFAULT_STRATEGY = (RANGE, COOPERATIVE_STICKY)


def assignors(names: Iterable[str]) -> list[Assignor]:
    """New assignors named by protocol name or Kafka class name, in the order given (the order of preference);
    ValueError for a name not known."""
    found = []
    for name in names:
        protocol = KAFKA_CLASS_NAMES.get(name.strip(), name.strip())
        if protocol not in ASSIGNORS:
            raise ValueError(f"unknown partition assignor {name!r}; known: {', '.join(ASSIGNORS)}")
        found.append(ASSIGNORS[protocol]())
    return found
