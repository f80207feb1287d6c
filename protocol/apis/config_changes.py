"""Changing topic configs: AlterConfigs (33), which replaces a resource's overrides, and IncrementalAlterConfigs (44),
which sets and deletes some. Any broker answers, writing /config/topics/<topic> in ZooKeeper with its change
notification, as Kafka's ZooKeeper-mode brokers do.

On Kafka's wire: AlterConfigs v0-2 (v2 flexible), IncrementalAlterConfigs v0-1 (v1 flexible), the versions Kafka 3.9
serves."""

from __future__ import annotations

from enum import IntEnum, unique

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int8, Int16, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec


@unique
class ConfigOperation(IntEnum):
    """IncrementalAlterConfigs' operations, Kafka's numbers (APPEND and SUBTRACT are for list configs)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@message
class AlterableConfig:
    """One config and its new value (AlterConfigs: the resource keeps only the configs named)."""

    name: str
    value: str | None


@message
class AlterConfigsResource:
    """The new overrides of a topic (resource type 2)."""

    resource_type: Int8
    resource_name: str
    configs: list[AlterableConfig]


@message
class AlterConfigsRequest:
    """Replace resources' overrides; validate_only checks them without a change."""

    resources: list[AlterConfigsResource]
    validate_only: bool = False


@message
class IncrementalAlterableConfig:
    """One config's change: a ConfigOperation and its value."""

    name: str
    config_operation: Int8
    value: str | None


@message
class IncrementalAlterConfigsResource:
    """Changes to a topic's overrides (resource type 2)."""

    resource_type: Int8
    resource_name: str
    configs: list[IncrementalAlterableConfig]


@message
class IncrementalAlterConfigsRequest:
    """Set and delete some of resources' overrides; validate_only checks them without a change."""

    resources: list[IncrementalAlterConfigsResource]
    validate_only: bool = False


@message
class AlterConfigsResult:
    """The outcome for one resource."""

    error_code: Int16
    error_message: str | None = None
    resource_type: Int8
    resource_name: str


@message
class AlterConfigsResponse:
    """Per-resource results."""

    responses: list[AlterConfigsResult]


@message
class IncrementalAlterConfigsResponse:
    """Per-resource results."""

    responses: list[AlterConfigsResult]


def _results(resources: list, code: ErrorCode, message: str | None) -> list[AlterConfigsResult]:
    return [AlterConfigsResult(error_code=code, error_message=message, resource_type=r.resource_type,
                               resource_name=r.resource_name) for r in resources]


def alter_configs_error(request: AlterConfigsRequest, code: ErrorCode, message: str | None) -> AlterConfigsResponse:
    """The answer to an AlterConfigs that failed as a whole: the error for every resource."""
    return AlterConfigsResponse(responses=_results(request.resources, code, message))


def incremental_alter_configs_error(request: IncrementalAlterConfigsRequest, code: ErrorCode, message: str | None
                                    ) -> IncrementalAlterConfigsResponse:
    """The answer to an IncrementalAlterConfigs that failed as a whole: the error for every resource."""
    return IncrementalAlterConfigsResponse(responses=_results(request.resources, code, message))


def _alter_request(message: Message, _version: int) -> AlterConfigsRequest:
    return AlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=r["resource_type"], resource_name=r["resource_name"],
        configs=[AlterableConfig(name=c["name"], value=c["value"]) for c in r["configs"]])
        for r in message["resources"]], validate_only=message["validate_only"])


def _incremental_request(message: Message, _version: int) -> IncrementalAlterConfigsRequest:
    return IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsResource(
        resource_type=r["resource_type"], resource_name=r["resource_name"],
        configs=[IncrementalAlterableConfig(name=c["name"], config_operation=c["config_operation"], value=c["value"])
                 for c in r["configs"]]) for r in message["resources"]], validate_only=message["validate_only"])


def _response(body: AlterConfigsResponse | IncrementalAlterConfigsResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "responses": [
        {"error_code": r.error_code, "error_message": r.error_message, "resource_type": r.resource_type,
         "resource_name": r.resource_name} for r in body.responses]}


ALTER_CONFIGS = Api(ApiKey.ALTER_CONFIGS, "AlterConfigs", AlterConfigsRequest, AlterConfigsResponse,
                    alter_configs_error, kafka=spec_codec("AlterConfigs", _alter_request, _response))
INCREMENTAL_ALTER_CONFIGS = Api(
    ApiKey.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs", IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, incremental_alter_configs_error,
    kafka=spec_codec("IncrementalAlterConfigs", _incremental_request, _response))
