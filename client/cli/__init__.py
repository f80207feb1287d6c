"""The ``minikafka`` command line: one module per command or command group."""

from __future__ import annotations

import click

from client.cli.broker import broker_command
from client.cli.chaos import chaos_group
from client.cli.cluster import cluster_group
from client.cli.consume import consume_command, record_json
from client.cli.dump_log import dump_log
from client.cli.produce import produce_command, split_key
from client.cli.topic import describe_json, describe_lines, topic_group
from client.cli.verify import verify_command

__all__ = ["describe_json", "describe_lines", "main", "record_json", "split_key"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """minikafka: Kafka's replication layer, on one machine."""


for command in (broker_command, cluster_group, topic_group, produce_command, consume_command, dump_log,
                verify_command, chaos_group):
    main.add_command(command)
