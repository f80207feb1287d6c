"""__consumer_offsets under the log cleaner: a group's many commits, written by the coordinator to a real compacted
log, shrink to the latest of each key when it is cleaned, and the next coordinator (after a leadership move, or a
broker restart that reopens the cleaned segments) loads the group and its latest committed offsets from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from broker.coordinator.group.requests import CommitRequest, OffsetToCommit
from broker.coordinator.offsets_topic import offsets_topic_configs
from broker.log.config import LogConfig
from broker.log.log import Log
from protocol.consumer_offsets import OFFSETS_TOPIC
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition
from tests.unit.logutil import ManualClock, clean_log, every_record
from tests.unit.test_group_shell import (
    CONFIG,
    GROUP,
    ORDERS,
    StandInReplicas,
    form_group,
    lead_all,
    offsets_partitions,
    shell_over,
)

COMMITS = 300
PAYMENTS = TopicPartition("payments", 2)


@dataclass
class CompactedReplicas(StandInReplicas):
    """The stand-in replica manager with real logs of __consumer_offsets, configured as the coordinator creates the
    topic (cleanup.policy=compact), in small segments."""

    directory: Path = Path()
    clock: ManualClock = field(default_factory=ManualClock)

    def log(self, partition: int) -> Log:  # type: ignore[override]
        if partition not in self.logs:
            tp = TopicPartition(OFFSETS_TOPIC, partition)
            config = LogConfig().with_topic_overrides({**offsets_topic_configs(CONFIG), "segment.bytes": "4096"})
            self.logs[partition] = Log(self.directory / f"{tp.topic}-{tp.partition}", tp, config, clock=self.clock)
        return self.logs[partition]


async def test_a_groups_commits_shrink_when_cleaned_and_load_back_after_a_move_and_a_restart(tmp_path: Path):
    replicas = CompactedReplicas(directory=tmp_path)
    first = shell_over(replicas)
    await lead_all(first, replicas)
    member, generation = await form_group(first, session_ms=60_000)
    for i in range(COMMITS):
        committed = await first.commit(CommitRequest(GROUP, {ORDERS: OffsetToCommit(i), PAYMENTS: OffsetToCommit(
            10 * i, metadata=f"m{i}")}, generation, member))
        assert committed.errors == {ORDERS: ErrorCode.NONE, PAYMENTS: ErrorCode.NONE}
    partition = first.partition_for(GROUP)
    log = replicas.log(partition)
    assert log.config.cleanup_policy == ("compact",)
    log.update_high_watermark(log.log_end_offset)
    end, written = log.log_end_offset, len(every_record(log))
    assert written == 2 * COMMITS + 1 and len(log.segments) > 5

    cleaned_to = clean_log(log, replicas.clock)
    assert cleaned_to == log.active_segment.base_offset
    kept = every_record(log)
    assert len(kept) < written / 5 and log.log_end_offset == end
    assert len([r for r in kept if r.offset < cleaned_to]) <= 3  # the group, and each partition's latest commit

    async def loaded_as_committed(replicas: CompactedReplicas) -> None:
        shell = shell_over(replicas)
        await lead_all(shell, replicas)
        fetched = shell.fetch_offsets(GROUP, [ORDERS, PAYMENTS], False)
        assert fetched.error is ErrorCode.NONE
        assert (fetched.partitions[ORDERS].offset, fetched.partitions[PAYMENTS].offset) == (COMMITS - 1,
                                                                                           10 * (COMMITS - 1))
        assert fetched.partitions[PAYMENTS].metadata == f"m{COMMITS - 1}"
        [described] = shell.describe([GROUP])
        assert (described.state, [m.member_id for m in described.members]) == ("Stable", [member])
        await shell.shutdown()

    # The partition's leadership moves to another coordinator, which loads it from the cleaned log.
    first.on_leadership_change((), offsets_partitions(partition))
    await loaded_as_committed(replicas)
    await first.shutdown()
    # The broker restarts: its logs are opened again from the cleaned segments.
    for opened in replicas.logs.values():
        opened.close()
    await loaded_as_committed(CompactedReplicas(directory=tmp_path, clock=replicas.clock))
