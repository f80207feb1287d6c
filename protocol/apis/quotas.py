"""Client quotas: DescribeClientQuotas (48). minikafka enforces no quotas, so every description is empty; Kafka's
`kafka-configs --describe --entity-type users` asks for users' quotas beside their SCRAM credentials. On Kafka's
wire: v0-1 (v1 flexible)."""

from __future__ import annotations

from dataclasses import field

from protocol.apis.api import Api, ApiKey, error_only
from protocol.codec import Int8, Int16, message
from protocol.kafka.api import Message, spec_codec


@message
class QuotaFilterComponent:
    """Which entities to describe: an entity type, how to match (Kafka's match type: 0 exact, 1 default, 2 any)."""

    entity_type: str
    match_type: Int8
    match: str | None = None


@message
class DescribeClientQuotasRequest:
    """The entities whose quotas to describe."""

    components: list[QuotaFilterComponent] = field(default_factory=list)
    strict: bool = False


@message
class DescribeClientQuotasResponse:
    """No entity has a quota in minikafka: no entries, or the error."""

    error_code: Int16
    error_message: str | None = None


def _kafka_request(message: Message, _version: int) -> DescribeClientQuotasRequest:
    return DescribeClientQuotasRequest(
        components=[QuotaFilterComponent(entity_type=c["entity_type"], match_type=c["match_type"], match=c["match"])
                    for c in message["components"]], strict=message["strict"])


def _kafka_response(body: DescribeClientQuotasResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "error_code": body.error_code, "error_message": body.error_message,
            "entries": [] if body.error_code == 0 else None}


DESCRIBE_CLIENT_QUOTAS = Api(ApiKey.DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotas", DescribeClientQuotasRequest,
                             DescribeClientQuotasResponse, error_only(DescribeClientQuotasResponse),
                             kafka=spec_codec("DescribeClientQuotas", _kafka_request, _kafka_response))
