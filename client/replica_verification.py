"""The online replica check, as Kafka's kafka-replica-verification: every replica of each partition is read from
the same offset (Fetch as a debugging consumer, which reads followers too, each up to its own high watermark),
and the batches are compared in step, below each replica's HW: base and last offsets, partition leader epoch and
CRC must agree, and each batch's CRC must match its bytes. What agreed is skipped next round; the report gives
the largest lag (HW minus verified offset) and where, as Kafka's tool does.

This is the online check on running brokers; the PySpark verifier is the offline one, over the data directories.
The comparison (`compare`) is pure.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from client.metadata import ClusterMetadata
from protocol.apis.fetch import CONSUMER_REPLICA_ID, DEBUGGING_CONSUMER_ID, FetchPartition, FetchRequest, FetchResponse
from protocol.apis.offsets import EARLIEST_TIMESTAMP, ListOffsetsPartition, ListOffsetsRequest, ListOffsetsResponse
from protocol.apis.shapes import Topic
from protocol.errors import ErrorCode
from protocol.records import RecordBatchError, TruncatedBatchError, read_header, validate_batch

FETCH_SIZE = 1024 * 1024  # per partition and replica, as Kafka's default fetch.max.bytes order of magnitude


@dataclass(frozen=True, slots=True)
class BatchSummary:
    """What is compared of one batch: its offsets, leader epoch and stored CRC, and whether the CRC matches."""

    base_offset: int
    last_offset: int
    leader_epoch: int
    crc: int
    intact: bool


def summarize(records: bytes) -> list[BatchSummary]:
    """The whole batches of a fetched buffer (a torn last batch is left for the next fetch)."""
    batches = []
    pos = 0
    while pos < len(records):
        try:
            header = read_header(records, pos)
        except TruncatedBatchError:
            break
        try:
            validate_batch(records, pos)
            intact = True
        except RecordBatchError:
            intact = False
        batches.append(BatchSummary(header.base_offset, header.last_offset, header.partition_leader_epoch,
                                    header.crc, intact))
        pos += header.size_in_bytes
    return batches


@dataclass(frozen=True, slots=True)
class Fetched:
    """One replica's answer: its high watermark and the batches from the asked offset."""

    high_watermark: int
    batches: list[BatchSummary]


def compare(topic: str, partition: int, fetched: Mapping[int, Fetched]) -> tuple[int | None, list[str]]:
    """Walk the replicas' batches in step while every replica has one below its HW; returns the offset after the
    last batch all replicas agree on (None if none was compared) and the disagreements found, as messages."""
    replicas = sorted(fetched)
    verified: int | None = None
    problems: list[str] = []
    for step in range(max((len(f.batches) for f in fetched.values()), default=0)):
        batches = {}
        for replica in replicas:
            answer = fetched[replica]
            if step >= len(answer.batches) or answer.batches[step].last_offset >= answer.high_watermark:
                return verified, problems
            batches[replica] = answer.batches[step]
        first, reference = replicas[0], batches[replicas[0]]
        for replica, batch in batches.items():
            if not batch.intact:
                problems.append(f"partition {topic}-{partition}: replica {replica}'s batch at offset "
                                f"{batch.base_offset} does not match its CRC {batch.crc:#010x}")
            if (batch.base_offset, batch.last_offset) != (reference.base_offset, reference.last_offset):
                problems.append(f"partition {topic}-{partition}: replica {first}'s offsets "
                                f"{reference.base_offset}..{reference.last_offset} don't match replica {replica}'s "
                                f"{batch.base_offset}..{batch.last_offset}")
                return verified, problems  # out of step: nothing further can be compared
            if batch.leader_epoch != reference.leader_epoch:
                problems.append(f"partition {topic}-{partition} has unmatched leader epoch at offset "
                                f"{batch.last_offset}; replica {first}'s {reference.leader_epoch}; replica "
                                f"{replica}'s {batch.leader_epoch}")
            if batch.crc != reference.crc:
                problems.append(f"partition {topic}-{partition} has unmatched checksum at offset {batch.last_offset}; "
                                f"replica {first}'s checksum {reference.crc}; replica {replica}'s checksum {batch.crc}")
        if problems:
            return verified, problems
        verified = reference.last_offset + 1
    return verified, problems


@dataclass
class PartitionProgress:
    """How far one partition's replicas are verified."""

    topic: str
    partition: int
    replicas: list[int]
    leader: int
    offset: int = 0
    high_watermark: int = 0  # the largest HW among the replicas last seen
    target: int | None = None  # with --once: the leader's HW when the check began
    problems: list[str] = field(default_factory=list)
    unreadable: dict[int, str] = field(default_factory=dict)  # replica -> why its last fetch failed

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def lag(self) -> int:
        return max(0, self.high_watermark - self.offset)

    @property
    def done(self) -> bool:
        return self.target is not None and self.offset >= self.target


@dataclass(frozen=True, slots=True)
class Report:
    """Kafka's report line: the largest lag, where, among how many partitions, and the disagreements seen."""

    time_ms: int
    max_lag: int
    partition: str
    offset: int
    partitions: int
    problems: tuple[str, ...]

    def line(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.time_ms / 1000))
        return (f"{when},{self.time_ms % 1000:03d}: max lag is {self.max_lag} for partition {self.partition} at "
                f"offset {self.offset} among {self.partitions} partitions")


class ReplicaVerifier:
    """Verifies the replicas of the topics matching a regular expression, round after round."""

    def __init__(self, bootstrap_servers: str, topic_pattern: str, *, fetch_size: int = FETCH_SIZE,
                 request_timeout_ms: int = 10000, tls: ssl.SSLContext | None = None) -> None:
        self.pattern = re.compile(topic_pattern)
        self.fetch_size = fetch_size
        self.metadata = ClusterMetadata(bootstrap_servers, client_id="replica-verification",
                                        request_timeout_ms=request_timeout_ms, tls=tls)
        self.partitions: list[PartitionProgress] = []

    async def close(self) -> None:
        await self.metadata.close()

    async def start(self, *, once: bool) -> None:
        """Find the partitions and where to start (the leader's log start offset); with `once`, each partition's
        goal is the leader's HW now."""
        await self.metadata.refresh()
        topics = [t for t in self.metadata.topics() if self.pattern.fullmatch(t)]
        if not topics:
            raise ValueError(f"no topic matches {self.pattern.pattern!r}")
        self.partitions = [PartitionProgress(p.topic, p.partition, list(p.replicas), p.leader)
                           for t in topics for p in self.metadata.partitions(t) or ()]
        for progress in self.partitions:
            progress.offset = await self._log_start(progress)
        if once:
            await self.verify_round()
            for progress in self.partitions:
                progress.target = progress.high_watermark

    async def _log_start(self, progress: PartitionProgress) -> int:
        connection = await self.metadata.connection(progress.leader)
        response = await connection.request(ListOffsetsRequest(
            replica_id=CONSUMER_REPLICA_ID, isolation_level=0, topics=[Topic(name=progress.topic, partitions=[
                ListOffsetsPartition(partition=progress.partition, timestamp=EARLIEST_TIMESTAMP)])]))
        assert isinstance(response, ListOffsetsResponse)
        answer = response.topics[0].partitions[0]
        return answer.offset if answer.error_code == ErrorCode.NONE else 0

    async def verify_round(self) -> int:
        """Fetch every replica once from each partition's verified offset and compare; returns how many
        partitions moved on."""
        brokers = sorted({r for p in self.partitions for r in p.replicas})
        answers = await asyncio.gather(*(self._fetch(b) for b in brokers))
        fetched: dict[tuple[str, int], dict[int, Fetched]] = {}
        for broker, answer in zip(brokers, answers, strict=True):
            for key, result in answer.items():
                fetched.setdefault(key, {})[broker] = result
        moved = 0
        for progress in self.partitions:
            got = fetched.get((progress.topic, progress.partition), {})
            progress.unreadable = {r: "no answer" for r in progress.replicas if r not in got}
            progress.unreadable.update({r: str(v) for r, v in got.items() if isinstance(v, str)})
            readable = {r: v for r, v in got.items() if isinstance(v, Fetched)}
            if readable:
                progress.high_watermark = max(progress.high_watermark, *(f.high_watermark for f in readable.values()))
            if progress.unreadable or progress.problems:
                continue
            verified, problems = compare(progress.topic, progress.partition, readable)
            progress.problems += problems
            if verified is not None and verified > progress.offset:
                progress.offset = verified
                moved += 1
        return moved

    async def _fetch(self, broker: int) -> dict[tuple[str, int], Fetched | str]:
        """One Fetch of every partition the broker hosts a replica of: Fetched, or why not."""
        hosted = [p for p in self.partitions if broker in p.replicas]
        by_topic: dict[str, list[FetchPartition]] = {}
        for p in hosted:
            by_topic.setdefault(p.topic, []).append(FetchPartition(
                partition=p.partition, fetch_offset=p.offset, partition_max_bytes=self.fetch_size))
        request = FetchRequest(replica_id=DEBUGGING_CONSUMER_ID, max_wait_ms=0, min_bytes=1,
                               max_bytes=self.fetch_size * max(1, len(hosted)),
                               topics=[Topic(name=t, partitions=ps) for t, ps in by_topic.items()])
        try:
            response = await (await self.metadata.connection(broker)).request(request)
        except Exception as e:  # the broker is down or does not answer: its replicas wait
            return {(p.topic, p.partition): f"broker {broker}: {e}" for p in hosted}
        assert isinstance(response, FetchResponse)
        result: dict[tuple[str, int], Fetched | str] = {}
        for topic in response.topics:
            for answer in topic.partitions:
                code = ErrorCode.from_code(answer.error_code)
                result[(topic.name, answer.partition)] = (
                    Fetched(answer.high_watermark, summarize(answer.records)) if code == ErrorCode.NONE
                    else f"broker {broker}: {code.name}")
        return result

    def report(self) -> Report:
        worst = max(self.partitions, key=lambda p: p.lag)
        return Report(int(time.time() * 1000), worst.lag, worst.name, worst.offset, len(self.partitions),
                      tuple(problem for p in self.partitions for problem in p.problems))

    async def run_once(self, timeout_s: float, backoff_s: float = 0.1) -> bool:
        """Verify every partition up to its goal; False at the first disagreement, or if the goal is not reached
        within timeout_s (a replica that cannot be read, or that does not catch up)."""
        deadline = time.monotonic() + timeout_s
        while True:
            if any(p.problems for p in self.partitions):
                return False
            if all(p.done for p in self.partitions):
                return True
            if time.monotonic() > deadline:
                return False
            if not await self.verify_round():
                await asyncio.sleep(backoff_s)

    def unfinished(self) -> Sequence[PartitionProgress]:
        return [p for p in self.partitions if not p.done]
