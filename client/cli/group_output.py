"""What `minikafka consumer-groups` prints, pure: kafka-consumer-groups' tables (the same columns, widths and
blank lines), its notices about a group's state, and the --json forms."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from client.group.descriptions import GroupDescription, GroupListing, MemberDescription
from protocol.topic_partition import TopicPartition

MISSING = "-"
REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


@dataclass(frozen=True, slots=True)
class PartitionRow:
    """One row of `--describe`: a partition of the group, its committed offset, log end offset and lag, and the
    member it is assigned to ("-" without one; None where a value is not known)."""

    group: str
    topic: str | None
    partition: int | None
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None


def _cell(value: object) -> str:
    return MISSING if value is None else str(value)


def _row(widths: Sequence[int], cells: Sequence[object]) -> str:
    """Java's printf("%-Ws %-Ws ... %s"): cells padded to their widths, joined by spaces; a cell without a width
    (the last, if there is one more cell than widths) as it is."""
    padded = [f"{_cell(c):<{w}}" for w, c in zip(widths, cells, strict=False)]
    return " ".join(padded + [_cell(c) for c in cells[len(widths):]])


def state_notice(group: str, state: str) -> tuple[str, bool] | None:
    """What kafka-consumer-groups says before a group's table, and whether it is an error: a Dead group does not
    exist; an Empty one has no members; one in a rebalance is rebalancing."""
    if state == "Dead":
        return f"Error: Consumer group '{group}' does not exist.", True
    if state == "Empty":
        return f"\nConsumer group '{group}' has no active members.", False
    if state in REBALANCING:
        return f"\nWarning: Consumer group '{group}' is rebalancing.", False
    return None


# ------------------------------------------------------------------------------------------------ --describe


def offset_rows(described: GroupDescription, committed: Mapping[TopicPartition, int],
                log_ends: Mapping[TopicPartition, int]) -> list[PartitionRow]:
    """The rows of `--describe` (--offsets): the partitions of each member with an assignment (members with more
    partitions first), then the group's other committed partitions, without a member."""

    def row(tp: TopicPartition, member: MemberDescription | None) -> PartitionRow:
        offset, end = committed.get(tp), log_ends.get(tp)
        lag = None if offset is None or end is None else end - offset
        if member is None:
            return PartitionRow(described.group_id, tp.topic, tp.partition, offset, end, lag, MISSING, MISSING, MISSING)
        return PartitionRow(described.group_id, tp.topic, tp.partition, offset, end, lag, member.member_id,
                            member.host, member.client_id)

    rows, assigned = [], set()
    members = sorted((m for m in described.members if m.assignment), key=lambda m: -len(m.assignment))
    for member in members:
        rows += [row(tp, member) for tp in sorted(member.assignment)]
        assigned.update(member.assignment)
    return rows + [row(tp, None) for tp in sorted(set(committed) - assigned)]


def offsets_lines(rows: Sequence[PartitionRow]) -> list[str]:
    """kafka-consumer-groups --describe: a blank line, the header, one line per row."""
    widths = [max([15, *(len(r.group) for r in rows)]), max([15, *(len(_cell(r.topic)) for r in rows)]), 10, 15, 15,
              15, max([15, *(len(_cell(r.consumer_id)) for r in rows)]),
              max([15, *(len(_cell(r.host)) for r in rows)])]
    header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
              "CLIENT-ID"]
    return ["", _row(widths, header), *(_row(widths, [r.group, r.topic, r.partition, r.current_offset,
                                                      r.log_end_offset, r.lag, r.consumer_id, r.host, r.client_id])
                                        for r in rows)]


def offsets_json(rows: Sequence[PartitionRow]) -> list[dict[str, Any]]:
    """`--describe --json`: one object per row, kafka-consumer-groups' columns as keys (null for "-")."""
    return [{key: None if value == MISSING else value for key, value in asdict(row).items()} for row in rows]


def _assignment_text(assignment: Sequence[TopicPartition]) -> str:
    """--members --verbose: each topic's partitions as "(0,1,2)", as kafka-consumer-groups prints them."""
    if not assignment:
        return MISSING
    by_topic: dict[str, list[str]] = {}
    for tp in assignment:
        by_topic.setdefault(tp.topic, []).append(str(tp.partition))
    return ", ".join(sorted("(" + ",".join(sorted(numbers)) + ")" for numbers in by_topic.values()))


def members_lines(described: GroupDescription, verbose: bool) -> list[str]:
    """kafka-consumer-groups --describe --members [--verbose]."""
    members = described.members
    instance_ids = any(m.group_instance_id for m in members)
    widths = [max([15, len(described.group_id)]), max([15, *(len(m.member_id) for m in members)])]
    header = ["GROUP", "CONSUMER-ID"]
    if instance_ids:
        widths.append(max([17, *(len(m.group_instance_id or "") for m in members)]))
        header.append("GROUP-INSTANCE-ID")
    widths += [max([15, *(len(m.host) for m in members)]), max([15, *(len(m.client_id) for m in members)]), 15]
    header += ["HOST", "CLIENT-ID", "#PARTITIONS"]

    lines = ["", _row(widths, [*header, "ASSIGNMENT" if verbose else ""])]
    for m in members:
        cells: list[object] = [described.group_id, m.member_id]
        if instance_ids:
            cells.append(m.group_instance_id or "")
        cells += [m.host, m.client_id, len(m.assignment), _assignment_text(m.assignment) if verbose else ""]
        lines.append(_row(widths, cells))
    return lines


def members_json(described: GroupDescription) -> list[dict[str, Any]]:
    return [{"group": described.group_id, "consumer_id": m.member_id, "group_instance_id": m.group_instance_id,
             "host": m.host, "client_id": m.client_id, "partitions": len(m.assignment),
             "assignment": [{"topic": tp.topic, "partition": tp.partition} for tp in m.assignment]}
            for m in described.members]


def state_lines(described: GroupDescription) -> list[str]:
    """kafka-consumer-groups --describe --state."""
    c = described.coordinator
    coordinator = f"{c.host}:{c.port}  ({c.node_id})"
    widths = [max(25, len(coordinator)), 25, 20, 15]
    return ["", _row(widths, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]),
            _row(widths, [described.group_id, coordinator, described.protocol, described.state,
                          len(described.members)])]


def state_json(described: GroupDescription) -> dict[str, Any]:
    c = described.coordinator
    return {"group": described.group_id, "coordinator": {"id": c.node_id, "host": c.host, "port": c.port},
            "assignment_strategy": described.protocol, "state": described.state, "members": len(described.members)}


# ------------------------------------------------------------------------------------ --list, --reset-offsets


def list_lines(listings: Sequence[GroupListing], with_state: bool) -> list[str]:
    """kafka-consumer-groups --list [--state]."""
    if not with_state:
        return [g.group_id for g in listings]
    widths = [max([15, *(len(g.group_id) for g in listings)]) + 10, 20]
    return [_row(widths, ["GROUP", "STATE"])] + [_row(widths, [g.group_id, g.state]) for g in listings]


def list_json(listings: Sequence[GroupListing]) -> list[dict[str, Any]]:
    return [{"group": g.group_id, "state": g.state} for g in listings]


def reset_lines(plans: Mapping[str, Mapping[TopicPartition, int]]) -> list[str]:
    """kafka-consumer-groups --reset-offsets: the new offsets of each group."""
    widths = [30, 30, 10, 15]
    lines = [""]
    if plans:
        lines.append(_row(widths, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]))
    for group, offsets in plans.items():
        lines += [_row(widths, [group, tp.topic, tp.partition, offset]) for tp, offset in sorted(offsets.items())]
    return lines


def reset_json(plans: Mapping[str, Mapping[TopicPartition, int]]) -> list[dict[str, Any]]:
    return [{"group": group, "topic": tp.topic, "partition": tp.partition, "new_offset": offset}
            for group, offsets in plans.items() for tp, offset in sorted(offsets.items())]
