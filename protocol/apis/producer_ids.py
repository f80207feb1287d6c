"""Producer ids for idempotent producers: InitProducerId (22)."""

from __future__ import annotations

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int16, Int32, Int64, message
from protocol.errors import ErrorCode
from protocol.kafka.api import spec_codec


@message
class InitProducerIdRequest:
    """Ask for a producer id for an idempotent producer (transactional ids are not supported); from v3 a producer
    asking again names its current id and epoch (both, or neither: -1)."""

    transactional_id: str | None = None
    transaction_timeout_ms: Int32 = -1
    producer_id: Int64 = -1
    producer_epoch: Int16 = -1


@message
class InitProducerIdResponse:
    """A new producer id and its epoch (0)."""

    error_code: Int16
    error_message: str | None = None
    producer_id: Int64 = -1
    producer_epoch: Int16 = -1


def init_producer_id_error(_request: InitProducerIdRequest, code: ErrorCode, message: str | None
                           ) -> InitProducerIdResponse:
    """The answer to an InitProducerId that failed as a whole: the error, no producer id."""
    return InitProducerIdResponse(error_code=code, error_message=message)


INIT_PRODUCER_ID = Api(
    ApiKey.INIT_PRODUCER_ID, "InitProducerId", InitProducerIdRequest, InitProducerIdResponse, init_producer_id_error,
    kafka=spec_codec("InitProducerId",
                     lambda message, _version: InitProducerIdRequest(
                         transactional_id=message["transactional_id"],
                         transaction_timeout_ms=message["transaction_timeout_ms"],
                         producer_id=message["producer_id"], producer_epoch=message["producer_epoch"]),
                     lambda body, _version: {"throttle_time_ms": 0, "error_code": body.error_code,
                                             "producer_id": body.producer_id, "producer_epoch": body.producer_epoch}))
