"""`minikafka consumer-groups`: kafka-consumer-groups' actions and flags: --list, --describe (--offsets, --members,
--state), --reset-offsets, --delete and --delete-offsets, with its output, and --json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from client.admin import Admin
from client.cli.common import client_options, client_security, resolve_bootstrap, run
from client.cli.group_output import (
    list_json,
    list_lines,
    members_json,
    members_lines,
    offsets_json,
    offsets_lines,
    reset_json,
    reset_lines,
    state_json,
    state_lines,
    state_notice,
)
from client.group.descriptions import GroupDescription
from client.group.lag import offset_rows
from client.group.offset_reset import ResetTo, parse_datetime, parse_topic_partitions, plan_reset
from protocol.apis.offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from protocol.consumer_protocol import CONSUMER_PROTOCOL_TYPE
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition

ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
GROUP_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling")
_INACTIVE = ("Empty", "Dead")


@dataclass(frozen=True, slots=True)
class Options:
    """The command line, checked."""

    action: str
    groups: tuple[str, ...]
    all_groups: bool
    topics: tuple[str, ...]
    all_topics: bool
    view: str  # --describe: "offsets", "members" or "state"
    verbose: bool
    states: tuple[str, ...] | None  # --list: None without --state, () for every state
    reset: tuple[ResetTo, int | None] | None
    execute: bool
    timeout_ms: int
    as_json: bool


def parse_states(text: str) -> tuple[str, ...]:
    """--list --state's comma-separated states (Kafka's names, any case), as Kafka names them."""
    by_lower = {state.lower(): state for state in GROUP_STATES}
    states = tuple(by_lower.get(s.strip().lower(), "") for s in text.split(",") if s.strip())
    if "" in states:
        raise click.BadParameter(f"Invalid state list '{text}'. Valid states are: {', '.join(GROUP_STATES)}",
                                 param_hint="--state")
    return states


def check_options(given: dict[str, Any]) -> Options:
    """kafka-consumer-groups' rules for combining options; click.UsageError for a combination it refuses."""
    actions = [a for a in ACTIONS if given[a]]
    if len(actions) != 1:
        raise click.UsageError("Command must include exactly one action: --list, --describe, --delete, "
                               "--reset-offsets, --delete-offsets")
    action = actions[0]
    flag = "--" + action.replace("_", "-")
    groups, all_groups, topics = given["groups"], given["all_groups"], given["topics"]
    if groups and all_groups:
        raise click.UsageError("--group and --all-groups exclude each other")
    if action in ("describe", "delete", "reset_offsets") and not groups and not all_groups:
        raise click.UsageError(f"Option {flag} takes one of these options: --all-groups, --group")
    if action == "list" and (groups or all_groups):
        raise click.UsageError("Option --group is not allowed with --list")
    if topics and action not in ("reset_offsets", "delete_offsets"):
        raise click.UsageError("Option --topic is allowed only with --reset-offsets and --delete-offsets")
    if action == "delete_offsets" and (len(groups) != 1 or not topics):
        raise click.UsageError("Option --delete-offsets takes the following options: --group (one), --topic")
    views = [v for v in ("members", "offsets") if given[v]] + (["state"] if given["state"] is not None else [])
    if action == "describe" and len(views) > 1:
        raise click.UsageError("Option --describe takes at most one of these options: --members, --offsets, --state")
    if action == "describe" and given["state"]:
        raise click.UsageError("Option --describe does not take a value for --state")
    allowed_views = {"describe": {"members", "offsets", "state"}, "list": {"state"}}.get(action, set())
    if not set(views) <= allowed_views:
        raise click.UsageError("--members, --offsets and --state go with --describe (--state also with --list)")
    if given["verbose"] and action != "describe":
        raise click.UsageError("Option --verbose goes with --describe only")
    return Options(action, tuple(groups), all_groups, tuple(topics), given["all_topics"],
                   views[0] if views else "offsets", given["verbose"],
                   None if given["state"] is None else parse_states(given["state"]),
                   _reset_scenario(given) if action == "reset_offsets" else None, given["execute"],
                   given["timeout_ms"], given["as_json"])


def _reset_scenario(given: dict[str, Any]) -> tuple[ResetTo, int | None]:
    chosen = [(ResetTo.EARLIEST, None)] if given["to_earliest"] else []
    chosen += [(ResetTo.LATEST, None)] if given["to_latest"] else []
    chosen += [(ResetTo.OFFSET, given["to_offset"])] if given["to_offset"] is not None else []
    chosen += [(ResetTo.SHIFT_BY, given["shift_by"])] if given["shift_by"] is not None else []
    if given["to_datetime"] is not None:
        try:
            chosen.append((ResetTo.DATETIME, parse_datetime(given["to_datetime"])))
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--to-datetime") from None
    if len(chosen) != 1:
        raise click.UsageError("Option --reset-offsets takes exactly one of these options: --to-earliest, "
                               "--to-latest, --to-offset, --shift-by, --to-datetime")
    if given["dry_run"] and given["execute"]:
        raise click.UsageError("Option --reset-offsets only accepts one of --execute and --dry-run")
    if bool(given["topics"]) == given["all_topics"]:
        raise click.UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    if not given["dry_run"] and not given["execute"]:
        click.echo("WARN: No action will be performed as the --execute option is missing. Add --dry-run to keep "
                   "this behaviour without the warning, or --execute to reset the offsets.", err=True)
    return chosen[0]


class _Run:
    """One run of the command against a cluster: prints as it goes, remembers whether it reported an error."""

    def __init__(self, admin: Admin, options: Options) -> None:
        self.admin = admin
        self.options = options
        self.failed = False
        self.out: list[Any] = []  # --json: the objects to print at the end

    def echo(self, lines: list[str]) -> None:
        if not self.options.as_json:
            click.echo("\n".join(lines))

    def notice(self, group: str, state: str) -> None:
        said = state_notice(group, state)
        if said is not None:
            click.echo(said[0], err=True)
            self.failed = self.failed or said[1]

    async def group_ids(self) -> list[str]:
        if self.options.all_groups:
            return [g.group_id for g in await self._listings(())]
        return sorted(set(self.options.groups))

    async def _listings(self, states: tuple[str, ...]) -> list[Any]:
        listings = await self.admin.list_groups(states, timeout_ms=self.options.timeout_ms)
        return [g for g in listings if g.protocol_type in (CONSUMER_PROTOCOL_TYPE, "")]

    async def list(self) -> None:
        listings = await self._listings(self.options.states or ())
        self.out = list_json(listings)
        self.echo(list_lines(listings, self.options.states is not None))

    async def describe(self) -> None:
        descriptions = await self.admin.describe_groups(await self.group_ids(), timeout_ms=self.options.timeout_ms)
        for group, described in sorted(descriptions.items()):
            self.notice(group, described.state)
            if self.options.view == "members":
                self.out += members_json(described)
                self.echo(members_lines(described, self.options.verbose))
            elif described.state == "Dead":
                continue
            elif self.options.view == "state":
                self.out.append(state_json(described))
                self.echo(state_lines(described))
            else:
                await self._describe_offsets(described)

    async def _describe_offsets(self, described: GroupDescription) -> None:
        committed = await self.admin.list_group_offsets(described.group_id, timeout_ms=self.options.timeout_ms)
        partitions = set(committed) | {tp for m in described.members for tp in m.assignment}
        log_ends = await self.admin.list_offsets(partitions, LATEST_TIMESTAMP, timeout_ms=self.options.timeout_ms)
        rows = offset_rows(described, {tp: o.offset for tp, o in committed.items()}, log_ends)
        if rows:
            self.out += offsets_json(rows)
            self.echo(offsets_lines(rows))

    async def reset_offsets(self) -> None:
        descriptions = await self.admin.describe_groups(await self.group_ids(), timeout_ms=self.options.timeout_ms)
        plans: dict[str, dict[TopicPartition, int]] = {}
        for group, described in sorted(descriptions.items()):
            if described.state in _INACTIVE:
                plans[group] = await self._reset_group(group)
            else:
                click.echo(f"Error: Assignments can only be reset if the group '{group}' is inactive, but the "
                           f"current state is {described.state}.", err=True)
                self.failed = True
                plans[group] = {}
        self.out = reset_json(plans)
        self.echo(reset_lines(plans))

    async def _reset_group(self, group: str) -> dict[TopicPartition, int]:
        timeout = self.options.timeout_ms
        committed = {tp: o.offset for tp, o in (await self.admin.list_group_offsets(group, timeout_ms=timeout)).items()}
        partitions = sorted(committed) if self.options.all_topics else await self._topic_partitions()
        scenario, value = self.options.reset or (ResetTo.EARLIEST, None)
        starts = await self.admin.list_offsets(partitions, EARLIEST_TIMESTAMP, timeout_ms=timeout)
        ends = await self.admin.list_offsets(partitions, LATEST_TIMESTAMP, timeout_ms=timeout)
        missing = [tp for tp in partitions if tp not in starts or tp not in ends]
        if missing:
            raise click.UsageError(f"Error getting the offsets of topic partition: {missing[0]}")
        by_time = None
        if scenario is ResetTo.DATETIME:
            assert value is not None
            by_time = await self.admin.list_offsets(partitions, value, timeout_ms=timeout)
        try:
            plan = plan_reset(partitions, scenario, value, committed=committed, log_starts=starts, log_ends=ends,
                              by_time=by_time)
        except ValueError as e:
            raise click.UsageError(str(e)) from None
        for warning in plan.warnings:
            click.echo(f"WARN: {warning}", err=True)
        if self.options.execute:
            await self.admin.alter_group_offsets(group, plan.offsets, timeout_ms=timeout)
        return plan.offsets

    async def _topic_partitions(self) -> list[TopicPartition]:
        whole = sorted({t for t in self.options.topics if ":" not in t})
        counts: dict[str, int] = {}
        if whole:
            for info in await self.admin.describe_topics(whole):
                counts[info.topic] = max(counts.get(info.topic, 0), info.partition + 1)
        try:
            return sorted({tp for t in self.options.topics for tp in parse_topic_partitions(t, counts)})
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--topic") from None

    async def delete(self) -> None:
        errors = await self.admin.delete_groups(await self.group_ids(), timeout_ms=self.options.timeout_ms)
        self.out = [{"group": g, "error": None if e == ErrorCode.NONE else e.name} for g, e in sorted(errors.items())]
        deleted = [g for g, e in sorted(errors.items()) if e == ErrorCode.NONE]
        failed = {g: e for g, e in sorted(errors.items()) if e != ErrorCode.NONE}
        if not failed:
            self.echo([f"Deletion of requested consumer groups ('{', '.join(deleted)}') was successful."])
            return
        self.failed = True
        click.echo("Error: Deletion of some consumer groups failed:", err=True)
        for group, error in failed.items():
            click.echo(f"* Group '{group}' could not be deleted due to: {error.name}", err=True)
        if deleted:
            self.echo(["", f"These consumer groups were deleted successfully: '{', '.join(deleted)}'"])

    async def delete_offsets(self) -> None:
        [group] = self.options.groups
        partitions = await self._topic_partitions()
        error, errors = await self.admin.delete_group_offsets(group, partitions, timeout_ms=self.options.timeout_ms)
        self.out = [{"group": group, "topic": tp.topic, "partition": tp.partition,
                     "error": None if e == ErrorCode.NONE else e.name} for tp, e in sorted(errors.items())]
        if error == ErrorCode.NONE and all(e == ErrorCode.NONE for e in errors.values()):
            self.echo([f"Request succeed for deleting offsets with topic {', '.join(self.options.topics)} group "
                       f"{group}"])
        else:
            self.failed = True
            click.echo(f"Error: deleting the offsets of group '{group}' failed: {error.name}", err=True)
        self.echo(["", f"{'TOPIC':<30} {'PARTITION':<15} {'STATUS':<15}", *(
            f"{tp.topic:<30} {tp.partition:<15} {'Successful' if e == ErrorCode.NONE else 'Error: ' + e.name:<15}"
            for tp, e in sorted(errors.items()))])


@click.command("consumer-groups")
@click.option("--list", "list", is_flag=True, help="List all consumer groups.")
@click.option("--describe", is_flag=True, help="Describe groups: partitions, offsets, lag and members.")
@click.option("--delete", is_flag=True, help="Delete groups (empty ones) and their offsets.")
@click.option("--reset-offsets", is_flag=True, help="Reset the offsets of inactive groups (--dry-run by default).")
@click.option("--delete-offsets", is_flag=True, help="Delete a group's offsets of the topics given.")
@click.option("--group", "groups", multiple=True, metavar="GROUP", help="A group to act on (repeatable).")
@click.option("--all-groups", is_flag=True, help="Act on every consumer group.")
@click.option("--topic", "topics", multiple=True, metavar="TOPIC[:P,...]",
              help="A topic (or some of its partitions) to reset or delete offsets of (repeatable).")
@click.option("--all-topics", is_flag=True, help="--reset-offsets: every partition the group has offsets of.")
@click.option("--members", is_flag=True, help="--describe: the members.")
@click.option("--offsets", is_flag=True, help="--describe: partitions with offsets and lag (the default).")
@click.option("--verbose", is_flag=True, help="--describe --members: with each member's assignment.")
@click.option("--state", is_flag=False, flag_value="", default=None, metavar="[STATES]",
              help="--describe: the group's state; --list: with states, only those in STATES (comma-separated).")
@click.option("--to-earliest", is_flag=True, help="Reset to each partition's log start offset.")
@click.option("--to-latest", is_flag=True, help="Reset to each partition's log end offset.")
@click.option("--to-offset", type=int, metavar="N", help="Reset to offset N (kept within the log).")
@click.option("--shift-by", type=int, metavar="N", help="Move the committed offsets by N (+ or -).")
@click.option("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
              help="Reset to the first offset at or after this time (UTC unless a zone is given).")
@click.option("--dry-run", is_flag=True, help="Show the new offsets only (the default).")
@click.option("--execute", is_flag=True, help="Reset the offsets.")
@click.option("--timeout", "timeout_ms", type=click.IntRange(min=1), default=5000, show_default=True,
              help="How long to wait for the cluster's answers (ms).")
@click.option("--json", "as_json", is_flag=True, help="JSON instead of tables.")
@client_options
def consumer_groups_command(bootstrap_server: str | None, directory: Path, **given: Any) -> None:
    """List, describe, delete consumer groups and reset their offsets, as kafka-consumer-groups does (the same
    actions, flags and tables). An error makes the exit status 1."""
    options = check_options(given)
    bootstrap = resolve_bootstrap(bootstrap_server, directory)

    async def act() -> _Run:
        async with Admin(bootstrap, client_id="minikafka-cli", request_timeout_ms=options.timeout_ms,
                         **client_security()) as admin:
            command = _Run(admin, options)
            await getattr(command, options.action)()
            return command

    done = run(act())
    if options.as_json:
        click.echo(json.dumps(done.out))
    if done.failed:
        raise SystemExit(1)
