"""The ``minikafka`` command line: one module per command or command group."""

from __future__ import annotations

import click

from client.cli.acls import acls_command
from client.cli.broker import broker_command
from client.cli.chaos import chaos_group
from client.cli.cluster import cluster_group
from client.cli.console import console_command
from client.cli.consume import consume_command, record_json
from client.cli.consumer_groups import consumer_groups_command
from client.cli.delete_records import delete_records_command
from client.cli.dump_log import dump_log
from client.cli.leader_election import leader_election_command
from client.cli.log_dirs import log_dirs_command
from client.cli.produce import produce_command, split_key
from client.cli.reassign_partitions import reassign_partitions_command
from client.cli.replica_verification import replica_verification_command
from client.cli.state_change_log import state_change_log_group
from client.cli.topic import describe_json, describe_lines, topic_group
from client.cli.users import users_command
from client.cli.verify import verify_command

__all__ = ["describe_json", "describe_lines", "main", "record_json", "split_key"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """minikafka: Kafka's replication layer, on one machine."""


for command in (broker_command, cluster_group, topic_group, produce_command, consume_command, consumer_groups_command,
                dump_log, leader_election_command, reassign_partitions_command, delete_records_command,
                log_dirs_command, replica_verification_command, state_change_log_group, verify_command, chaos_group,
                console_command, acls_command, users_command):
    main.add_command(command)
