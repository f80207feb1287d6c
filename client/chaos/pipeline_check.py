"""The pipeline workload's check, pure: did the pipeline's output count every acknowledged record exactly once?

The soak's producers give every record a key of its own, so the pipeline's count of a key (summed over its
windows) is how many times that record was counted. Against the producers' history, as the soak judges records:
an acknowledged record must be counted exactly once; a record whose outcome is unknown was perhaps written, so
once or not at all; a failed one was never written (the producer knows it never reached a leader's log), so not
at all; a key no producer sent, never.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from protocol.history import FAILED, OK, Outcome

_EXAMPLES = 20


@dataclass(frozen=True)
class PipelineCheck:
    """Records the output counted (`counted`, summed over every key sent), acknowledged records it missed, and
    records it counted more often than they can have been written (with examples of each)."""

    counted: int
    missing: int
    duplicates: int
    missing_examples: list[str] = field(default_factory=list)
    duplicate_examples: list[str] = field(default_factory=list)


def _bounds(status: str) -> tuple[int, int]:
    """How often a record with this outcome may be counted: (at least, at most)."""
    if status == OK:
        return 1, 1
    return (0, 0) if status == FAILED else (0, 1)


def check_counts(outcomes: Iterable[Outcome], counted: Mapping[str, int]) -> PipelineCheck:
    """Compare the output's count of each key with the history's outcome of the record of that key."""
    sent: dict[str, Outcome] = {}
    for outcome in outcomes:
        if outcome.key is not None:
            sent[outcome.key.decode("utf-8", errors="backslashreplace")] = outcome
    missing: list[str] = []
    duplicates: list[str] = []
    for key, outcome in sent.items():
        least, most = _bounds(outcome.status)
        times = counted.get(key, 0)
        where = f"{outcome.topic}-{outcome.partition} {key!r} ({outcome.status}"
        where += f" at offset {outcome.offset})" if outcome.status == OK else ")"
        if times < least:
            missing.append(f"{where}: not counted")
        elif times > most:
            duplicates.append(f"{where}: counted {times} times")
    strangers = [f"{key!r} (sent by no producer): counted {times} times"
                 for key, times in counted.items() if key not in sent and times > 0]
    duplicates += strangers
    return PipelineCheck(counted=sum(counted.get(key, 0) for key in sent), missing=len(missing),
                         duplicates=len(duplicates), missing_examples=missing[:_EXAMPLES],
                         duplicate_examples=duplicates[:_EXAMPLES])
