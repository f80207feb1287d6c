"""`minikafka leader-election`: preferred or unclean leader elections, like Kafka's kafka-leader-election."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from client.admin import Admin, ElectionResult
from client.cli.common import client_options, client_security, resolve_bootstrap, run
from protocol.apis.elections import ElectionType
from protocol.errors import ErrorCode

ELECTION_TYPES = {"preferred": ElectionType.PREFERRED, "unclean": ElectionType.UNCLEAN}


def partitions_from_json(path: Path) -> list[tuple[str, int]]:
    """kafka-leader-election's --path-to-json-file: {"partitions": [{"topic": "t", "partition": 0}, ...]}."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise click.BadParameter(f"cannot read {path}: {e}", param_hint="--path-to-json-file") from None
    entries = value.get("partitions") if isinstance(value, dict) else None
    if not isinstance(entries, list) or not entries:
        raise click.BadParameter(f'{path} must hold {{"partitions": [{{"topic": ..., "partition": ...}}, ...]}}',
                                 param_hint="--path-to-json-file")
    partitions = []
    for entry in entries:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        partition = entry.get("partition") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or not isinstance(partition, int) or isinstance(partition, bool):
            raise click.BadParameter(f"{path}: not a topic and partition: {entry!r}", param_hint="--path-to-json-file")
        if (topic, partition) in partitions:
            raise click.BadParameter(f"{path}: {topic}-{partition} is given twice", param_hint="--path-to-json-file")
        partitions.append((topic, partition))
    return partitions


def outcome_word(result: ElectionResult) -> str:
    if result.error == ErrorCode.NONE:
        return "elected"
    if result.error == ErrorCode.ELECTION_NOT_NEEDED:
        return "already leader"
    return "not eligible"


def election_lines(results: list[ElectionResult]) -> list[str]:
    """One line per partition: elected, already leader, or not eligible, and why."""
    return [f"{r.topic}-{r.partition}: {outcome_word(r)}: {r.message or r.error.name}"
            for r in sorted(results, key=lambda r: (r.topic, r.partition))]


def election_json(results: list[ElectionResult]) -> list[dict[str, Any]]:
    return [{"topic": r.topic, "partition": r.partition, "outcome": outcome_word(r), "error": r.error.name,
             "message": r.message} for r in sorted(results, key=lambda r: (r.topic, r.partition))]


@click.command("leader-election")
@click.option("--election-type", type=click.Choice(list(ELECTION_TYPES)), required=True,
              help="preferred: the first replica of the assignment, if live and in the ISR; unclean: any live "
                   "replica of a partition without a live leader (records it lacks are lost).")
@click.option("--topic", help="The topic of the partition to elect for (with --partition).")
@click.option("--partition", type=click.IntRange(min=0), help="The partition to elect for (with --topic).")
@click.option("--all-topic-partitions", is_flag=True, help="Every partition of every topic.")
@click.option("--path-to-json-file", type=click.Path(dir_okay=False, path_type=Path),
              help='The partitions, as {"partitions": [{"topic": "t", "partition": 0}, ...]}.')
@click.option("--json", "as_json", is_flag=True, help="A JSON list with one object per partition.")
@client_options
def leader_election_command(election_type: str, topic: str | None, partition: int | None,
                            all_topic_partitions: bool, path_to_json_file: Path | None, as_json: bool,
                            bootstrap_server: str | None, directory: Path) -> None:
    """Elect partition leaders through the controller, like kafka-leader-election. Prints, per partition,
    elected / already leader / not eligible and why; exits 1 if a partition asked for could not be elected."""
    chosen = sum([topic is not None or partition is not None, all_topic_partitions, path_to_json_file is not None])
    if chosen != 1:
        raise click.UsageError("give exactly one of --topic with --partition, --all-topic-partitions, "
                               "--path-to-json-file")
    if (topic is None) != (partition is None):
        raise click.UsageError("--topic and --partition go together")
    partitions: list[tuple[str, int]] | None
    if path_to_json_file is not None:
        partitions = partitions_from_json(path_to_json_file)
    elif all_topic_partitions:
        partitions = None
    else:
        assert topic is not None and partition is not None
        partitions = [(topic, partition)]
    bootstrap = resolve_bootstrap(bootstrap_server, directory)

    async def elect() -> list[ElectionResult]:
        async with Admin(bootstrap, client_id="minikafka-cli", **client_security()) as admin:
            return await admin.elect_leaders(ELECTION_TYPES[election_type], partitions)

    results = run(elect())
    if as_json:
        click.echo(json.dumps(election_json(results)))
    else:
        for line in election_lines(results):
            click.echo(line)
    failed = [r for r in results if r.error not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED)]
    if failed:
        raise SystemExit(1)
