"""DescribeLogDirs: this broker's log dirs, each replica in them with its size and its log end's lag behind the
high watermark (Kafka's offset lag of a current log), and each dir's disk space."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from broker.apis.handler import Handled
from broker.log.log import Log
from broker.network import Request, Response
from protocol.apis.log_dirs import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    LogDirPartition,
    LogDirResult,
    LogDirTopic,
)
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition


class LogDirs(Protocol):
    """The broker's log dirs and the logs in them (the log manager)."""

    log_dirs: list[Path]

    @property
    def logs(self) -> Mapping[TopicPartition, Log]: ...


def describe_log_dirs(logs: LogDirs, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    wanted = None if request.topics is None else {
        TopicPartition(t.topic, p) for t in request.topics for p in t.partitions}
    by_dir: dict[Path, dict[str, list[LogDirPartition]]] = {Path(d): {} for d in logs.log_dirs}
    for tp, log in sorted(logs.logs.items()):
        if wanted is not None and tp not in wanted:
            continue
        by_dir.setdefault(log.dir.parent, {}).setdefault(tp.topic, []).append(LogDirPartition(
            partition_index=tp.partition, partition_size=log.size_in_bytes,
            offset_lag=max(0, log.high_watermark - log.log_end_offset)))
    results = []
    for directory, topics in by_dir.items():
        usage = shutil.disk_usage(directory)
        results.append(LogDirResult(
            error_code=ErrorCode.NONE, log_dir=str(directory.resolve()), total_bytes=usage.total,
            usable_bytes=usage.free, topics=[LogDirTopic(name=name, partitions=partitions)
                                             for name, partitions in topics.items()]))
    return DescribeLogDirsResponse(error_code=ErrorCode.NONE, results=results)


async def handle_describe_log_dirs(logs: LogDirs, body: DescribeLogDirsRequest, _request: Request) -> Handled:
    return Response(describe_log_dirs(logs, body))
