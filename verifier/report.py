"""The verifier's report: the ``--json`` object, and the per-partition tables printed without ``--json``."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

KINDS = ("crc", "offset-gap", "divergence", "epoch-cache", "checkpoint", "lost")


@dataclass(frozen=True, slots=True)
class Violation:
    kind: str
    topic: str | None
    partition: int | None
    broker: int | None
    offset: int | None
    detail: str

    def sort_key(self) -> tuple[Any, ...]:
        return (self.topic or "", self.partition if self.partition is not None else -1, KINDS.index(self.kind),
                self.offset if self.offset is not None else -1, self.broker if self.broker is not None else -1,
                self.detail)


@dataclass(frozen=True, slots=True)
class ReplicaRow:
    """One replica as the table shows it."""

    broker: int
    topic: str
    partition: int
    log_start: int
    hw: int
    hw_checkpoint: int | None
    leo: int
    recovery_point: int | None
    batches: int
    records: int
    bytes: int
    epochs: tuple[tuple[int, int], ...] | None


@dataclass(frozen=True, slots=True)
class TornTail:
    broker: int
    topic: str
    partition: int
    segment: int
    position: int
    bytes: int
    detail: str


@dataclass
class Report:
    """Everything the verifier found. `to_json()` is the ``--json`` object."""

    replicas: list[ReplicaRow]
    violations: list[Violation]
    torn_tails: list[TornTail] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Set when a history was checked: its counts (acked, lost, failed, failed_present, unknown, unknown_present,
    #: duplicates).
    history: dict[str, int] | None = None

    @property
    def consistent(self) -> bool:
        return not self.violations

    def to_json(self) -> dict[str, Any]:
        history = self.history or {}
        return {
            "consistent": self.consistent,
            "partitions": len({(r.topic, r.partition) for r in self.replicas}),
            "replicas": len(self.replicas),
            "batches": sum(r.batches for r in self.replicas),
            "records": sum(r.records for r in self.replicas),
            "bytes": sum(r.bytes for r in self.replicas),
            "acked": history.get("acked", 0),
            "lost": history.get("lost", 0),
            "violations": [asdict(v) for v in sorted(self.violations, key=Violation.sort_key)],
            "torn_tails": [asdict(t) for t in self.torn_tails],
            "history": self.history,
            "notes": self.notes,
        }


def render_table(report: Report) -> str:
    """Per partition, each replica's log start, HW, LEO and epochs, the first divergent offset if any and the other
    violations; then the verdict."""
    by_partition: dict[tuple[str, int], list[ReplicaRow]] = defaultdict(list)
    for row in report.replicas:
        by_partition[(row.topic, row.partition)].append(row)
    problems: dict[tuple[str | None, int | None], list[Violation]] = defaultdict(list)
    for violation in sorted(report.violations, key=Violation.sort_key):
        problems[(violation.topic, violation.partition)].append(violation)
    tails: dict[tuple[str, int], list[TornTail]] = defaultdict(list)
    for tail in report.torn_tails:
        tails[(tail.topic, tail.partition)].append(tail)
    lines: list[str] = []
    for general in problems.pop((None, None), []):
        lines.append(f"{general.kind}: {_where(general)}{general.detail}")
    for key in sorted(by_partition):
        topic, partition = key
        lines.append(f"{topic}-{partition}")
        lines.append(f"  {'broker':>6}  {'log start':>10}  {'HW':>10}  {'LEO':>10}  {'records':>9}  "
                     "epochs (epoch@start)")
        for r in sorted(by_partition[key], key=lambda r: r.broker):
            hw = f"{r.hw}" if r.hw_checkpoint is not None else f"({r.hw})"
            epochs = " ".join(f"{e}@{s}" for e, s in r.epochs) if r.epochs is not None else "(none)"
            lines.append(f"  {r.broker:>6}  {r.log_start:>10}  {hw:>10}  {r.leo:>10}  {r.records:>9}  {epochs}")
        for violation in problems.pop(key, []):
            lines.append(f"  {violation.kind}: {_where(violation)}{violation.detail}")
        for tail in tails.get(key, []):
            lines.append(f"  torn tail on broker {tail.broker}: {tail.segment:020d}.log position {tail.position}, "
                         f"{tail.bytes} bytes beyond the log end (not corruption)")
    for rest in problems.values():  # violations of partitions without replicas here (history records)
        for violation in rest:
            lines.append(f"{violation.kind}: {_where(violation)}{violation.detail}")
    if report.history is not None:
        h = report.history
        lines.append(f"history: {h['acked']} acknowledged, {h['lost']} lost; {h['failed']} failed "
                     f"({h['failed_present']} present anyway), {h['unknown']} unknown ({h['unknown_present']} "
                     f"present); {h['duplicates']} acknowledged values at more than one offset")
    for note in report.notes:
        lines.append(f"note: {note}")
    lines.append(_verdict(report))
    return "\n".join(lines)


def _where(v: Violation) -> str:
    parts = []
    if v.topic is not None:
        parts.append(f"{v.topic}-{v.partition}")
    if v.broker is not None:
        parts.append(f"broker {v.broker}")
    if v.offset is not None:
        parts.append(f"offset {v.offset}")
    return f"{', '.join(parts)}: " if parts else ""


def _verdict(report: Report) -> str:
    summary = report.to_json()
    counts = f"{summary['partitions']} partitions, {summary['replicas']} replicas, {summary['batches']} batches, " \
             f"{summary['records']} records"
    if report.consistent:
        return f"CONSISTENT: {counts}, no violation"
    kinds = Counter(v.kind for v in report.violations)
    listed = ", ".join(f"{kinds[k]} {k}" for k in KINDS if kinds[k])
    return f"INCONSISTENT: {counts}; {len(report.violations)} violations ({listed})"
