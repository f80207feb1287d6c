"""Which Kafka error code answers an exception of the produce or fetch path (the log's, a record batch's, I/O)."""

from __future__ import annotations

from broker.log.log import OffsetOutOfRangeError, RecordTooLargeError
from protocol.errors import ErrorCode, KafkaError
from protocol.records import RecordBatchError, UnsupportedCompressionError


def error_code_of(error: Exception) -> ErrorCode:
    """Kafka's error code for an exception raised on the produce or fetch path."""
    if isinstance(error, KafkaError):
        return error.code
    if isinstance(error, RecordTooLargeError):
        return ErrorCode.MESSAGE_TOO_LARGE
    if isinstance(error, UnsupportedCompressionError):
        return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    if isinstance(error, RecordBatchError):
        return ErrorCode.CORRUPT_MESSAGE
    if isinstance(error, OffsetOutOfRangeError):
        return ErrorCode.OFFSET_OUT_OF_RANGE
    if isinstance(error, OSError):
        return ErrorCode.KAFKA_STORAGE_ERROR
    return ErrorCode.UNKNOWN_SERVER_ERROR
