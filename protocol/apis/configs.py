"""Topic and broker configs: DescribeConfigs (32)."""

from __future__ import annotations

from dataclasses import field
from enum import IntEnum, unique

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int8, Int16, message
from protocol.errors import ErrorCode
from protocol.kafka.api import Message, spec_codec


@unique
class ConfigResourceType(IntEnum):
    """Kafka's config resource types."""

    TOPIC = 2
    BROKER = 4


@unique
class ConfigSource(IntEnum):
    """Where a config value comes from, with Kafka's numbers."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


@unique
class ConfigType(IntEnum):
    """A config's value type, with Kafka's numbers."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    LONG = 5
    DOUBLE = 6
    LIST = 7
    PASSWORD = 9


@message
class DescribeConfigsResource:
    """A topic or broker whose configs to describe; configuration_keys None means all of them."""

    resource_type: Int8
    resource_name: str
    configuration_keys: list[str] | None = None


@message
class DescribeConfigsRequest:
    """Describe topic or broker configs."""

    resources: list[DescribeConfigsResource]
    include_synonyms: bool = False


@message
class ConfigSynonym:
    """A config the value could also come from (a broker default behind a topic config)."""

    name: str
    value: str | None
    source: Int8


@message
class ConfigEntry:
    """One config: its value, where it comes from and its type."""

    name: str
    value: str | None
    read_only: bool = False
    config_source: Int8
    is_sensitive: bool = False
    synonyms: list[ConfigSynonym] = field(default_factory=list)
    config_type: Int8 = 0


@message
class DescribeConfigsResult:
    """The configs of one resource, or why not."""

    error_code: Int16
    error_message: str | None = None
    resource_type: Int8
    resource_name: str
    configs: list[ConfigEntry]


@message
class DescribeConfigsResponse:
    """Per-resource results."""

    results: list[DescribeConfigsResult]


def describe_configs_error(request: DescribeConfigsRequest, code: ErrorCode, message: str | None
                           ) -> DescribeConfigsResponse:
    """The answer to a DescribeConfigs that failed as a whole: the error for every resource."""
    return DescribeConfigsResponse(results=[DescribeConfigsResult(
        error_code=code, error_message=message, resource_type=r.resource_type, resource_name=r.resource_name,
        configs=[]) for r in request.resources])


def _kafka_request(message: Message, _version: int) -> DescribeConfigsRequest:
    return DescribeConfigsRequest(
        resources=[DescribeConfigsResource(resource_type=r["resource_type"], resource_name=r["resource_name"],
                                           configuration_keys=r["configuration_keys"]) for r in message["resources"]],
        include_synonyms=message["include_synonyms"])


def _kafka_response(body: DescribeConfigsResponse, _version: int) -> Message:
    return {"throttle_time_ms": 0, "results": [{
        "error_code": r.error_code, "error_message": r.error_message, "resource_type": r.resource_type,
        "resource_name": r.resource_name, "configs": [{
            "name": c.name, "value": c.value, "read_only": c.read_only, "config_source": c.config_source,
            "is_sensitive": c.is_sensitive, "config_type": c.config_type, "documentation": None,
            "synonyms": [{"name": s.name, "value": s.value, "source": s.source} for s in c.synonyms],
        } for c in r.configs]} for r in body.results]}


DESCRIBE_CONFIGS = Api(ApiKey.DESCRIBE_CONFIGS, "DescribeConfigs", DescribeConfigsRequest, DescribeConfigsResponse,
                       describe_configs_error, kafka=spec_codec("DescribeConfigs", _kafka_request, _kafka_response))
