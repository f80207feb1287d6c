"""What is in a set of broker log directories: brokers, checkpoint files, partition replicas and their segments.

Read on the driver, with no Spark: small files only (meta.properties, the checkpoints, directory listings). Kafka's
layout and minikafka's are the same; whatever the verifier does not know (KRaft's ``__cluster_metadata``, producer
state ``.snapshot`` files, ``partition.metadata``, directories being deleted ...) is skipped with a note.

A directory that is not a log directory (no meta.properties with a broker.id or node.id) is a LayoutError: bad
input, not a finding. A checkpoint file that cannot be parsed is a finding (a Violation of kind ``checkpoint``).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from broker.log.checkpoint import (
    CLEAN_SHUTDOWN_MARKER,
    CLEANER_OFFSET_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointError,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    read_meta_properties,
)
from protocol.topic_partition import TopicPartition
from verifier.report import Violation

OFFSET_CHECKPOINTS = (REPLICATION_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT)
#: Topics whose logs are not record logs of this kind (KRaft's metadata log).
SKIPPED_TOPICS = ("__cluster_metadata",)
_PARTITION_DIR = re.compile(r"(?P<topic>.+)-(?P<partition>0|[1-9][0-9]*)")
_SEGMENT_FILE = re.compile(r"(?P<base>[0-9]{20})\.(?P<suffix>log|index|timeindex)")
_NUMBERED_FILE = re.compile(r"[0-9]{20}\..+")
#: Files of a log directory's root that the verifier knows and does not need (beyond the checkpoints).
_KNOWN_ROOT_FILES = {CLEAN_SHUTDOWN_MARKER, META_PROPERTIES, CLEANER_OFFSET_CHECKPOINT, ".lock", "state-change.log",
                     *OFFSET_CHECKPOINTS}


class LayoutError(Exception):
    """A path that is not a readable broker log directory."""


@dataclass(frozen=True, slots=True)
class Segment:
    """One ``.log`` file: its base offset (from its name), path, size and whether an offset index is beside it."""

    base_offset: int
    path: str
    size: int
    index_path: str | None


@dataclass(frozen=True, slots=True)
class Replica:
    """One partition directory of one log directory, and what the checkpoints say about it."""

    replica_id: int
    dir_index: int
    broker: int
    topic: str
    partition: int
    path: str
    segments: tuple[Segment, ...]
    high_watermark: int | None
    recovery_point: int | None
    log_start_checkpoint: int | None
    #: (epoch, start offset) entries of leader-epoch-checkpoint; None if the file is missing or unreadable.
    epochs: tuple[tuple[int, int], ...] | None

    @property
    def log_start_offset(self) -> int:
        """The log-start-offset-checkpoint entry, never before the first segment (as a broker loads it)."""
        first = self.segments[0].base_offset if self.segments else 0
        return max(first, self.log_start_checkpoint or 0)


@dataclass(frozen=True, slots=True)
class LogDir:
    """A broker log directory: its broker id and which offset checkpoint files it has."""

    index: int
    path: str
    broker: int
    #: checkpoint file name -> entries (missing file: absent; unreadable file: absent, and a finding)
    checkpoints: dict[str, dict[TopicPartition, int]]
    #: The partitions its cleaner-offset-checkpoint names: those whose segments the log cleaner has rewritten here.
    cleaned: frozenset[TopicPartition] = frozenset()


@dataclass
class Layout:
    log_dirs: list[LogDir] = field(default_factory=list)
    replicas: list[Replica] = field(default_factory=list)
    findings: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: The compacted partitions: checked by the compaction contract instead of batch for batch (verifier.compaction).
    compacted: frozenset[tuple[str, int]] = frozenset()

    @property
    def partitions(self) -> set[tuple[str, int]]:
        return {(r.topic, r.partition) for r in self.replicas}

    @property
    def compacted_replicas(self) -> list[int]:
        """The replica ids of the compacted partitions' replicas."""
        return [r.replica_id for r in self.replicas if (r.topic, r.partition) in self.compacted]


def read_layout(paths: list[Path], compacted_topics: Collection[str] = ()) -> Layout:
    """The layout of the given log directories; LayoutError for a path that is not one.

    A partition is compacted if a cleaner-offset-checkpoint of one of the directories names it (the log cleaner has
    rewritten its segments there: Kafka writes an entry after each cleaning, minikafka before its first replacement
    of a partition's segments), or if its topic is one of ``compacted_topics`` (for directories that cannot say so,
    such as Kafka's killed during its first cleaning of a partition)."""
    layout = Layout()
    ignored: Counter[str] = Counter()
    seen: dict[Path, int] = {}
    for index, path in enumerate(paths):
        resolved = Path(path).resolve()
        if resolved in seen:
            raise LayoutError(f"{path}: given twice")
        seen[resolved] = index
        log_dir = _read_log_dir(index, Path(path), layout)
        layout.log_dirs.append(log_dir)
        for entry in sorted(os.scandir(path), key=lambda e: e.name):
            if entry.is_dir():
                _read_partition_dir(log_dir, Path(entry.path), layout, ignored)
            elif entry.name not in _KNOWN_ROOT_FILES:
                ignored[f"file {entry.name} in a log directory's root"] += 1
    for what, count in sorted(ignored.items()):
        layout.notes.append(f"ignored {count} x {what}" if count > 1 else f"ignored {what}")
    named = {(tp.topic, tp.partition) for d in layout.log_dirs for tp in d.cleaned}
    layout.compacted = frozenset(p for p in layout.partitions if p in named or p[0] in compacted_topics)
    if layout.compacted:
        layout.notes.append(f"{len(layout.compacted)} compacted partitions ({_named(layout.compacted)}) are checked "
                            "by the compaction contract: offsets only increase and replicas agree on each key's latest"
                            " record, instead of batch for batch")
    brokers = Counter((r.broker, r.topic, r.partition) for r in layout.replicas)
    for (broker, topic, partition), count in sorted(brokers.items()):
        if count > 1:
            layout.notes.append(f"broker {broker} has {count} directories of {topic}-{partition} (in different "
                                "log directories): each is verified as a replica of its own")
    return layout


def _named(partitions: Collection[tuple[str, int]], shown: int = 5) -> str:
    names = [f"{topic}-{partition}" for topic, partition in sorted(partitions)]
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _read_log_dir(index: int, path: Path, layout: Layout) -> LogDir:
    if not path.is_dir():
        raise LayoutError(f"{path}: not a directory")
    try:
        meta = read_meta_properties(path)
    except (CheckpointError, OSError) as e:
        raise LayoutError(f"{path}: not a log directory: {META_PROPERTIES} cannot be read ({e})") from None
    if meta is None:
        raise LayoutError(f"{path}: not a log directory (no {META_PROPERTIES})")
    broker_text = meta.get("broker.id", meta.get("node.id"))
    try:
        broker = int(broker_text or "")
    except ValueError:
        raise LayoutError(f"{path}: not a log directory ({META_PROPERTIES} has no broker.id or node.id)") from None
    checkpoints: dict[str, dict[TopicPartition, int]] = {}
    for name in OFFSET_CHECKPOINTS:
        file = path / name
        if not file.exists():
            continue
        try:
            checkpoints[name] = OffsetCheckpointFile(file).read()
        except (CheckpointError, OSError) as e:
            layout.findings.append(Violation("checkpoint", None, None, broker, None, f"{file} cannot be read: {e}"))
    cleaned: dict[TopicPartition, int] = {}
    try:
        cleaned = OffsetCheckpointFile(path / CLEANER_OFFSET_CHECKPOINT).read()
    except (CheckpointError, OSError) as e:
        layout.findings.append(Violation("checkpoint", None, None, broker, None,
                                         f"{path / CLEANER_OFFSET_CHECKPOINT} cannot be read: {e}"))
    return LogDir(index, str(path), broker, checkpoints, frozenset(cleaned))


def _read_partition_dir(log_dir: LogDir, path: Path, layout: Layout, ignored: Counter[str]) -> None:
    match = _PARTITION_DIR.fullmatch(path.name)
    if match is None:
        ignored["directory that is not <topic>-<partition> (e.g. being deleted or moved)"] += 1
        return
    topic, partition = match["topic"], int(match["partition"])
    if topic in SKIPPED_TOPICS:
        ignored[f"{topic} partition (not a log of record batches to verify)"] += 1
        return
    logs: dict[int, os.DirEntry[str]] = {}
    indexes: set[int] = set()
    has_epoch_file = False
    for entry in os.scandir(path):
        segment = _SEGMENT_FILE.fullmatch(entry.name)
        if segment is not None and entry.is_file():
            base = int(segment["base"])
            if segment["suffix"] == "log":
                logs[base] = entry
            elif segment["suffix"] == "index":
                indexes.add(base)
        elif entry.name == LEADER_EPOCH_CHECKPOINT:
            has_epoch_file = True
        else:
            kind = Path(entry.name).suffix if _NUMBERED_FILE.fullmatch(entry.name) else entry.name
            ignored[f"{kind} file in partition directories"] += 1
    segments = tuple(
        Segment(base, entry.path, entry.stat().st_size,
                f"{entry.path.removesuffix('.log')}.index" if base in indexes else None)
        for base, entry in sorted(logs.items()))
    tp = TopicPartition(topic, partition)
    holds_batches = any(s.size > 0 for s in segments)
    epochs = _read_epochs(log_dir, tp, path / LEADER_EPOCH_CHECKPOINT, has_epoch_file, holds_batches, layout)
    checkpoints = log_dir.checkpoints
    layout.replicas.append(Replica(
        replica_id=len(layout.replicas), dir_index=log_dir.index, broker=log_dir.broker, topic=topic,
        partition=partition, path=str(path), segments=segments,
        high_watermark=checkpoints.get(REPLICATION_OFFSET_CHECKPOINT, {}).get(tp),
        recovery_point=checkpoints.get(RECOVERY_POINT_CHECKPOINT, {}).get(tp),
        log_start_checkpoint=checkpoints.get(LOG_START_OFFSET_CHECKPOINT, {}).get(tp),
        epochs=epochs))


def _read_epochs(log_dir: LogDir, tp: TopicPartition, file: Path, present: bool, holds_batches: bool,
                 layout: Layout) -> tuple[tuple[int, int], ...] | None:
    """The entries of ``file`` (``present``: its directory's listing has it). Missing, it is a finding only for a
    replica holding batches: a follower of a partition nothing was written to has no epoch to record yet."""
    if not present:
        if holds_batches:
            layout.findings.append(Violation("epoch-cache", tp.topic, tp.partition, log_dir.broker, None,
                                           f"{file} is missing"))
        return None
    try:
        return tuple((e.epoch, e.start_offset) for e in LeaderEpochCheckpointFile(file).read())
    except (CheckpointError, OSError) as e:
        layout.findings.append(Violation("epoch-cache", tp.topic, tp.partition, log_dir.broker, None,
                                       f"{file} cannot be read: {e}"))
        return None
