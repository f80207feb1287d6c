"""`minikafka users`: users' SCRAM credentials (AlterUserScramCredentials and DescribeUserScramCredentials, as
Kafka's `kafka-configs --entity-type users` sets them): --add NAME --password P, --delete NAME, --list."""

from __future__ import annotations

from pathlib import Path

import click

from client.admin import Admin
from client.cli.common import client_options, client_security, resolve_bootstrap, run
from protocol.sasl import SCRAM_SHA_256, SCRAM_SHA_512
from protocol.sasl.scram import MAX_ITERATIONS

DEFAULT_MECHANISM = SCRAM_SHA_512


@click.command("users")
@click.option("--add", "add", metavar="NAME", help="Add (or update) the user's credential.")
@click.option("--password", metavar="P", help="The password of --add.")
@click.option("--mechanism", type=click.Choice([SCRAM_SHA_256, SCRAM_SHA_512]), default=None,
              help=f"The SCRAM mechanism of --add [default: {DEFAULT_MECHANISM}] or the one to remove with --delete "
                   "[default: all].")
@click.option("--iterations", type=click.IntRange(4096, MAX_ITERATIONS), default=4096, show_default=True,
              help="The credential's iterations (--add).")
@click.option("--delete", "delete", metavar="NAME", help="Remove the user's credentials.")
@click.option("--list", "list_users", is_flag=True, help="List the users with a credential.")
@client_options
def users_command(add: str | None, password: str | None, mechanism: str | None, iterations: int,
                  delete: str | None, list_users: bool, bootstrap_server: str | None, directory: Path) -> None:
    """Manage users' SCRAM credentials, stored salted in ZooKeeper by the brokers (never the password)."""
    if sum((add is not None, delete is not None, list_users)) != 1:
        raise click.UsageError("give exactly one of --add, --delete and --list")
    if add is not None and not password:
        raise click.UsageError("--add needs --password")
    bootstrap = resolve_bootstrap(bootstrap_server, directory)

    async def act() -> list[str]:
        async with Admin(bootstrap, client_id="minikafka-cli", **client_security()) as admin:
            if add is not None:
                chosen = mechanism or DEFAULT_MECHANISM
                assert password is not None
                await admin.alter_user_scram_credentials(upsert={(add, chosen): (password, iterations)})
                return [f"Added {chosen} credential of user {add} ({iterations} iterations)"]
            if delete is not None:
                current = await admin.describe_user_scram_credentials([delete])
                names = [mechanism] if mechanism else [name for name, _ in current.get(delete, [])]
                await admin.alter_user_scram_credentials(delete=[(delete, name) for name in names])
                return [f"Deleted {', '.join(names)} credential(s) of user {delete}"]
            described = await admin.describe_user_scram_credentials()
            return [f"{user}\t" + ",".join(f"{name}(iterations={count})" for name, count in credentials)
                    for user, credentials in sorted(described.items())]

    for line in run(act()):
        click.echo(line)
