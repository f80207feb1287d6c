"""``minikafka dump-log`` prints a segment's batches and records, and names the position of damage."""

from __future__ import annotations

import json

from click.testing import CliRunner

from client.cli import main
from protocol.records import BatchBuilder
from tests.unit.logutil import batch, open_log


def test_dump_log_prints_batches_and_records(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch(b"hello", b"world", key=b"k"), leader_epoch=3)
    log.append_as_leader(batch(b"again"), leader_epoch=4)
    log.close()
    segment = log.segments[0].log_path
    result = CliRunner().invoke(main, ["dump-log", "--print-data", "--json", str(segment)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    batches = [line for line in lines if "baseOffset" in line]
    records = [line for line in lines if "value" in line]
    assert [(b["baseOffset"], b["lastOffset"], b["partitionLeaderEpoch"]) for b in batches] == [(0, 1, 3), (2, 2, 4)]
    assert [(r["offset"], r["key"], r["value"]) for r in records] == [(0, "k", "hello"), (1, "k", "world"),
                                                                      (2, None, "again")]


def test_dump_log_reports_a_corrupt_batch_with_its_position(tmp_path):
    log = open_log(tmp_path)
    first = log.append_as_leader(batch(b"fine"), leader_epoch=0)
    log.append_as_leader(batch(b"damaged"), leader_epoch=0)
    log.close()
    segment = log.segments[0].log_path
    data = bytearray(segment.read_bytes())
    data[-1] ^= 0xFF
    segment.write_bytes(bytes(data))
    result = CliRunner().invoke(main, ["dump-log", str(segment)])
    assert result.exit_code != 0
    assert "baseOffset: 0" in result.output
    assert f"invalid batch: batch at position {first.size_in_bytes} is corrupt" in result.output


def test_dump_log_prints_the_records_of_compressed_batches(tmp_path):
    log = open_log(tmp_path)
    for codec in (1, 2, 3, 4):
        builder = BatchBuilder(compression=codec)
        builder.append(b"value %d" % codec, key=b"k", timestamp=1_700_000_000_000)
        log.append_as_leader(builder.build(), leader_epoch=0)
    log.close()
    result = CliRunner().invoke(main, ["dump-log", "--print-data", str(log.segments[0].log_path)])
    assert result.exit_code == 0, result.output
    batches = [line for line in result.output.splitlines() if line.startswith("baseOffset")]
    assert [line.rsplit("compressCodec: ", 1)[1] for line in batches] == ["gzip", "snappy", "lz4", "zstd"]
    assert [line for line in result.output.splitlines() if line.startswith("| ")] == [
        f"| offset: {i} timestamp: 1700000000000 key: k value: value {i + 1} headers: {{}}" for i in range(4)]
