"""A broker's log dirs and the replicas in them: DescribeLogDirs (35), each replica's size and offset lag.

On Kafka's wire: v0-4, the versions Kafka 3.9 serves (v2+ flexible, an error for the request as a whole from v3,
each dir's total and usable bytes from v4)."""

from __future__ import annotations

from dataclasses import field

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int16, Int32, Int64, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec


@message
class DescribableLogDirTopic:
    """Some partitions of one topic."""

    topic: str
    partitions: list[Int32]


@message
class DescribeLogDirsRequest:
    """Describe this broker's log dirs, with the replicas of `topics` (None: every replica)."""

    topics: list[DescribableLogDirTopic] | None = None


@message
class LogDirPartition:
    """One replica: its size in bytes and how far its log end is behind the high watermark."""

    partition_index: Int32
    partition_size: Int64
    offset_lag: Int64


@message
class LogDirTopic:
    """The replicas of one topic in a log dir."""

    name: str
    partitions: list[LogDirPartition]


@message
class LogDirResult:
    """One log dir: its replicas, and its disk's total and usable bytes."""

    error_code: Int16
    log_dir: str
    topics: list[LogDirTopic]
    total_bytes: Int64 = -1
    usable_bytes: Int64 = -1


@message
class DescribeLogDirsResponse:
    """The broker's log dirs."""

    error_code: Int16
    results: list[LogDirResult] = field(default_factory=list)


def _kafka_request(message: Message, _version: int) -> DescribeLogDirsRequest:
    topics = message["topics"]
    return DescribeLogDirsRequest(topics=None if topics is None else [
        DescribableLogDirTopic(topic=t["topic"], partitions=t["partitions"]) for t in topics])


def _kafka_response(body: DescribeLogDirsResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "error_code": body.error_code, "results": [{
        "error_code": r.error_code, "log_dir": r.log_dir, "total_bytes": r.total_bytes,
        "usable_bytes": r.usable_bytes, "topics": [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "partition_size": p.partition_size, "offset_lag": p.offset_lag,
             "is_future_key": False} for p in t.partitions]} for t in r.topics]} for r in body.results]}


def describe_log_dirs_error(_request: DescribeLogDirsRequest, code: ErrorCode, _message: str | None
                            ) -> DescribeLogDirsResponse:
    """The answer to a DescribeLogDirs that failed as a whole: the error, no dirs."""
    return DescribeLogDirsResponse(error_code=code)


DESCRIBE_LOG_DIRS = Api(ApiKey.DESCRIBE_LOG_DIRS, "DescribeLogDirs", DescribeLogDirsRequest, DescribeLogDirsResponse,
                        describe_log_dirs_error, kafka=spec_codec("DescribeLogDirs", _kafka_request, _kafka_response))
