"""`minikafka broker`: one broker in the foreground."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command("broker")
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The broker's server.properties.",
)
@click.option("--override", "overrides", multiple=True, metavar="KEY=VALUE", help="Replace a property (repeatable).")
def broker_command(config_path: Path, overrides: tuple[str, ...]) -> None:
    """Run one broker in the foreground until SIGTERM or Ctrl-C.

    Settings come from --config, then from MINIKAFKA_CFG_<NAME> environment variables (NAME is the property
    in upper case with dots as underscores: MINIKAFKA_CFG_MIN_INSYNC_REPLICAS=2), then from --override."""
    from broker.config import ConfigError
    from broker.server import run_broker

    try:
        run_broker(config_path, list(overrides))
    except ConfigError as e:
        raise click.ClickException(f"{config_path}: {e}") from None
    except KeyboardInterrupt:
        sys.exit(130)
