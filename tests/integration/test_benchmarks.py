"""Short runs of the benchmarks behind `make bench-log`, `make bench-produce`, `make bench-failover`,
`make bench-kafka`, `make bench-compression`, `make bench-verify`, `make bench-scale`, `make bench-groups`,
`make bench-cleaner` and `make bench-pipeline`, as a user runs them (`python -m bench.NAME`), so that they keep
working. What they measure is not asserted: only that each run completes and reports every figure (the scale
benchmark also fails a run in which an acknowledged record is lost, a broker exits or a periodic task fails)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.scale_bench import LABELS
from zk.server import zookeeper_available

ROOT = Path(__file__).resolve().parents[2]
NUMBER = r"[\d,]+(?:\.\d+)?"


def run_bench(name: str, *args: str, timeout: float = 180) -> str:
    """Run bench/NAME.py with `args`; its output, after checking it exited 0."""
    result = subprocess.run(
        [sys.executable, "-m", f"bench.{name}", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, f"bench.{name} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture
def zookeeper_installed() -> None:
    if not zookeeper_available():
        pytest.fail("ZooKeeper (or java) is not installed: run make setup")


def test_the_log_benchmark_reports_write_append_and_read_rates(tmp_path: Path):
    out = run_bench("log_bench", "--size-mb", "8", "--runs", "1", "--dir", str(tmp_path))
    median = next(line for line in out.splitlines() if line.startswith("median of 1 runs"))
    assert re.search(rf"raw write {NUMBER} MB/s, log append {NUMBER} MB/s", median), median
    assert re.search(rf"log read {NUMBER} MB/s, append/raw {NUMBER}$", median), median
    assert list(tmp_path.iterdir()) == []  # the benchmark removes what it wrote


def test_the_cleaner_benchmark_reports_the_cleaning_rate_and_what_was_kept(tmp_path: Path):
    out = run_bench("cleaner_bench", "--size-mb", "8", "--segment-mb", "2", "--runs", "1", "--dir", str(tmp_path))
    lines = out.splitlines()
    assert re.fullmatch(rf"dirty log: \d+ records \(10% distinct keys, 100-byte values\), {NUMBER} MB in segments "
                        rf"of 2 MiB \(written in {NUMBER} s\)", lines[0]), lines[0]
    assert re.fullmatch(rf"run 1: {NUMBER} MB cleaned in {NUMBER} s \(\d+ passes\): {NUMBER} MB/s, {NUMBER} MB/s of "
                        rf"CPU time; \d+ records to \d+, {NUMBER} MB to {NUMBER} MB", lines[1]), lines[1]
    assert re.fullmatch(rf"median of 1 runs \({NUMBER} MB, 10% distinct keys\): cleaner {NUMBER} MB/s, {NUMBER} MB/s "
                        rf"of CPU time \(one core\)", lines[-1]), lines[-1]
    assert list(tmp_path.iterdir()) == []  # the benchmark removes what it wrote


def test_the_produce_benchmark_reports_both_acks_and_the_consume(tmp_path: Path, zookeeper_installed: None):
    out = run_bench("produce_bench", "--runs", "1", "--records", "3000", "--dir", str(tmp_path))
    lines = out.splitlines()
    heading = lines.index("median of 1 runs (3 partitions, RF 3, 100-byte values):")
    median = [line.strip() for line in lines[heading + 1 :]]
    rates = rf"({NUMBER}) records/s\s+({NUMBER}) MB/s\s+client CPU\s+({NUMBER}) us/record"
    latency = rf"\s+latency p50\s+({NUMBER}) ms p99\s+({NUMBER}) ms"
    patterns = [rf"produce acks=all\s+idempotent\s+{rates}{latency}",
                rf"produce acks=1\s+not idempotent\s+{rates}{latency}", rf"consume\s+{rates}"]
    assert len(median) == len(patterns), out
    for line, pattern in zip(median, patterns, strict=True):
        match = re.fullmatch(pattern, line)
        assert match, line
        assert all(float(value.replace(",", "")) > 0 for value in match.groups()[:2]), line  # records moved
    assert list(tmp_path.iterdir()) == []  # the cluster it started is stopped and removed


def test_the_failover_benchmark_reports_both_ways_of_losing_a_leader(zookeeper_installed: None):
    out = run_bench("failover_bench", "--runs", "1")
    median = out.splitlines()[-1]
    match = re.fullmatch(rf"median of 1: kill -9 \(leader crash\) ({NUMBER}) ms; SIGTERM \(controlled shutdown\) "
                         rf"({NUMBER}) ms", median)
    assert match, median
    assert all(float(value) > 0 for value in match.groups())


def test_the_kafka_client_benchmark_reports_both_clients(tmp_path: Path, zookeeper_installed: None):
    out = run_bench("kafka_client_bench", "--runs", "1", "--seconds", "0.3", "--dir", str(tmp_path))
    lines = out.splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("median of 1 runs (3 partitions, RF 3"))
    median = [line.strip() for line in lines[heading + 1:]]
    rates = rf"({NUMBER}) records/s\s+({NUMBER}) MB/s"
    latency = rf"\s+latency p50\s+{NUMBER} ms p99\s+{NUMBER} ms"
    cpu = rf"\s+CPU client\s+{NUMBER}% broker-1\s+{NUMBER}% broker-2\s+{NUMBER}% broker-3\s+{NUMBER}%"
    patterns = [rf"{client}\s+{phase}\s+{rates}{latency if phase != 'consume' else ''}{cpu}"
                for client in ("librdkafka", "minikafka") for phase in ("acks=all", "acks=1", "consume")]
    patterns += [rf"librdkafka acks=all over SASL_SSL \(SCRAM-SHA-512\)\s+{rates}\s+({NUMBER})x plaintext"
                 rf"{latency}{cpu}",
                 rf"authenticated connection \(TCP, TLS, SCRAM-SHA-512\) median of 100: ({NUMBER}) ms"]
    assert len(median) == len(patterns), out
    for line, pattern in zip(median, patterns, strict=True):
        match = re.fullmatch(pattern, line)
        assert match, line
        assert all(float(value.replace(",", "")) > 0 for value in match.groups()), line  # records moved
    assert list(tmp_path.iterdir()) == []


def test_the_compression_benchmark_reports_every_codec_of_both_clients(tmp_path: Path, zookeeper_installed: None):
    out = run_bench("compression_bench", "--runs", "1", "--seconds", "0.3", "--dir", str(tmp_path))
    lines = out.splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("median of 1 runs (3 partitions, RF 3"))
    median = [line.strip() for line in lines[heading + 1:]]
    patterns = [rf"{client}\s+{codec}\s+({NUMBER}) MB/s\s+stored ({NUMBER}) bytes/byte\s+broker CPU\s+({NUMBER}) "
                rf"ms/MB\s+client CPU\s+{NUMBER}%"
                for client in ("librdkafka", "minikafka") for codec in ("none", "gzip", "snappy", "lz4", "zstd")]
    assert len(median) == len(patterns), out
    for line, pattern in zip(median, patterns, strict=True):
        match = re.fullmatch(pattern, line)
        assert match, line
        assert all(float(value.replace(",", "")) > 0 for value in match.groups()), line
    assert list(tmp_path.iterdir()) == []


def test_the_groups_benchmark_reports_the_join_commits_and_both_ways_of_consuming(tmp_path: Path,
                                                                                   zookeeper_installed: None):
    out = run_bench("groups_bench", "--runs", "1", "--seconds", "0.3", "--dir", str(tmp_path))
    lines = out.splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("median of 1 runs (10 members on 30 "))
    median = [line.strip() for line in lines[heading + 1:]]
    patterns = [rf"join\s+({NUMBER}) ms from the first JoinGroup to a Stable group of 10",
                rf"commits\s+({NUMBER}) commits/s \(acks=all, 10 members committing at once\)",
                rf"consume\s+group\s+({NUMBER}) MB/s\s+assign\s+({NUMBER}) MB/s\s+ratio ({NUMBER})"]
    assert len(median) == len(patterns), out
    for line, pattern in zip(median, patterns, strict=True):
        match = re.fullmatch(pattern, line)
        assert match, line
        assert all(float(value.replace(",", "")) > 0 for value in match.groups()), line  # it joined, committed, read
    assert list(tmp_path.iterdir()) == []


def test_the_verify_benchmark_reports_start_up_read_and_verify_rates(tmp_path: Path, zookeeper_installed: None):
    out = run_bench("verify_bench", "--size-mb", "3", "--runs", "1", "--dir", str(tmp_path), timeout=300)
    lines = out.splitlines()
    assert re.fullmatch(rf"data: 3 brokers, 3 partitions x RF 3, {NUMBER} MB in \d+ segment files \(written in "
                        rf"{NUMBER} s\)", lines[0]), lines[0]
    assert re.fullmatch(rf"Spark session start-up \(local\[\*\]\): {NUMBER} s", lines[1]), lines[1]
    assert re.fullmatch(rf"first verification \(the JVM's warm-up\): {NUMBER} s; every verification's fixed cost "
                        rf"\(3 log directories without partitions\): {NUMBER} s", lines[2]), lines[2]
    assert re.fullmatch(rf"first read of the files from disk \(before the runs, not counted\): {NUMBER} MB/s",
                        lines[3]), lines[3]
    rates = rf"read ({NUMBER}) MB/s, verify ({NUMBER}) MB/s, ratio ({NUMBER})"
    match = re.fullmatch(rf"median of 1 runs: cold {rates}; warm {rates}", lines[-1])
    assert match, lines[-1]
    rates_read = [match.group(i) for i in (1, 2, 4, 5)]
    assert all(float(value.replace(",", "")) > 0 for value in rates_read), lines[-1]
    assert list(tmp_path.iterdir()) == []  # the cluster and its data are removed


def test_the_scale_benchmark_holds_1000_partitions_through_kills_restarts_and_a_controller_failover(
    zookeeper_installed: None,
):
    out = run_bench("scale_bench", "--runs", "1", "--partitions", "1000", "--big-topic", "500",
                    "--topic-size", "500", timeout=600)
    lines = out.splitlines()
    figures = dict(line.strip().rsplit(": ", 1) for line in lines[lines.index("medians of 1:") + 1:])
    assert list(figures) == list(LABELS.values()), out
    assert float(figures["acknowledged records lost"]) == 0, out
    assert float(figures["acks=all records acknowledged"]) > 0, out


def test_the_pipeline_benchmark_reports_both_clusters(tmp_path: Path, zookeeper_installed: None):
    out = run_bench("pipeline_bench", "--runs", "1", "--records", "3000", "--dir", str(tmp_path), timeout=900)
    lines = out.splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("median of 1 runs (3 partitions, RF 3"))
    median = [line.strip() for line in lines[heading + 1:]]
    patterns = [rf"{system}\s+({NUMBER}) records/s\s+\(query ({NUMBER}) s\)" for system in ("minikafka", "kafka")]
    patterns.append(rf"minikafka / kafka ({NUMBER})")
    assert len(median) == len(patterns), out
    for line, pattern in zip(median, patterns, strict=True):
        match = re.fullmatch(pattern, line)
        assert match, line
        assert all(float(value.replace(",", "")) > 0 for value in match.groups()), line  # records went through
    assert list(tmp_path.iterdir()) == []
