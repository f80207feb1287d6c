"""The pure rules of a leader's ISR writes to ZooKeeper: what a conflicting conditional write means, and how the
changed partitions are cut into ISR change notifications that each fit in a request. No I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from zk import znodes
from zk.ops import CreateOp, multi_bytes
from zk.znodes import LeaderIsrAndControllerEpoch


class Conflict(enum.Enum):
    """What the stored state of a partition whose conditional ISR write was refused (or rolled back) says."""

    #: Still at the version the write was conditional on: the write was only rolled back with its transaction.
    RETRY = "retry"
    #: Already holds exactly this leader, epoch and ISR: an earlier attempt wrote it and its answer was lost.
    WRITTEN = "written"
    #: Someone else (the controller) changed it: the leader's view is stale.
    STALE = "stale"


def conflict(wanted: LeaderIsrAndControllerEpoch, stored: LeaderIsrAndControllerEpoch) -> Conflict:
    """Classify a refused write of `wanted` by the `stored` state (with its znode version), as Kafka's
    checkLeaderAndIsrZkData recognises a write whose answer was lost."""
    if stored.zk_version == wanted.zk_version:
        return Conflict.RETRY
    if (stored.leader, stored.leader_epoch, tuple(stored.isr)) == (wanted.leader, wanted.leader_epoch,
                                                                   tuple(wanted.isr)):
        return Conflict.WRITTEN
    return Conflict.STALE


def notification_payloads(partitions: Sequence[tuple[str, int]], max_request_bytes: int, chroot: str = ""
                          ) -> list[tuple[bytes, Sequence[tuple[str, int]]]]:
    """The ISR change notifications naming `partitions`, as few as fit each in a create request of at most
    `max_request_bytes`: (data, the partitions it names) pairs. Kafka writes one notification per propagation
    (zkClient.propagateIsrChanges); ten thousand partitions take about 450 KB, so under a small jute.maxbuffer
    they are split in halves until each fits."""
    if not partitions:
        return []
    data = znodes.encode_isr_change(partitions)
    if multi_bytes([CreateOp(znodes.isr_change_sequence_path(), data)], chroot) <= max_request_bytes:
        return [(data, partitions)]
    if len(partitions) == 1:
        raise ValueError(f"an ISR change notification naming {partitions[0]} alone is over {max_request_bytes} bytes")
    half = len(partitions) // 2
    return [*notification_payloads(partitions[:half], max_request_bytes, chroot),
            *notification_payloads(partitions[half:], max_request_bytes, chroot)]
