"""``python -m verifier.class_archive [--check]``: the class data sharing archive that the verifier's driver JVM maps
when it starts (verifier.session.class_archive()), made by ``make setup``.

The archive is made by a session whose JVM writes every class it loaded into it when it exits: a verification of
three log directories (without partitions), with a producer history and Parquet output so that the classes those
need are in it too.
The JVM checks an archive against its own build and its class path when it starts, and where they differ (after an
update of Java or of PySpark) it runs without the archive, saying so in the Spark log: ``make setup`` makes it again.

``--check``: exit 0 if a session started now maps the archive, 1 (saying why) if not.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from py4j.java_gateway import JavaGateway
from pyspark.sql import SparkSession

from broker.log.checkpoint import write_meta_properties
from verifier import verify
from verifier.session import class_archive, get_session, spark_log_path

#: Seconds the JVM may take to write the archive and exit.
EXIT_TIMEOUT_S = 300
BROKERS = 3


class ArchiveError(Exception):
    """The JVM wrote no archive."""


def make_archive(path: Path) -> None:
    """Write the archive to ``path`` (through a file of its own beside it, renamed when complete)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        with tempfile.TemporaryDirectory(prefix="minikafka-class-archive-") as scratch:
            spark, _ = get_session(archive_classes_to=partial)
            verify(_log_dirs(Path(scratch)), _history(Path(scratch)), output=Path(scratch) / "parquet", spark=spark)
            _stop_jvm(spark)
        if not partial.is_file():
            raise ArchiveError(f"the JVM wrote no class archive (its log: {spark_log_path()})")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _log_dirs(scratch: Path) -> list[Path]:
    directories = [scratch / f"broker-{broker}" for broker in range(1, BROKERS + 1)]
    for broker, directory in enumerate(directories, start=1):
        directory.mkdir()
        write_meta_properties(directory, broker)
    return directories


def _history(scratch: Path) -> Path:
    """A history of one acknowledged record (of a topic the log directories lack: it is reported lost)."""
    path = scratch / "history.jsonl"
    record = {"topic": "t", "partition": 0, "offset": 0, "key": None, "value": "v", "status": "ok", "error": None}
    path.write_text(json.dumps(record) + "\n")
    return path


def _gateway(spark: SparkSession) -> JavaGateway:
    """PySpark's gateway to the session's driver JVM; its ``proc`` is the JVM's process, whose standard input is
    PySpark's pipe."""
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    return gateway


def _stop_jvm(spark: SparkSession) -> None:
    """Stop the session, then its JVM (which exits when its standard input closes), and wait until it has exited."""
    gateway = _gateway(spark)
    spark.stop()
    gateway.shutdown()
    gateway.proc.stdin.close()
    gateway.proc.wait(timeout=EXIT_TIMEOUT_S)


def archive_is_mapped() -> bool:
    """Whether a session started now maps the archive (into its driver JVM's memory)."""
    spark, _ = get_session()
    maps = Path(f"/proc/{_gateway(spark).proc.pid}/maps").read_text()
    return any(line.endswith(f" {class_archive()}") for line in maps.splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 0 if a session started now maps the archive")
    args = parser.parse_args()
    path = class_archive()
    if args.check:
        if not archive_is_mapped():
            raise SystemExit(f"the driver JVM does not map {path} (its log: {spark_log_path()})")
        return
    try:
        make_archive(path)
    except ArchiveError as e:
        raise SystemExit(f"error: {e}") from None
    print(f"wrote {path} ({path.stat().st_size / 1e6:,.0f} MB)")


if __name__ == "__main__":
    main()
