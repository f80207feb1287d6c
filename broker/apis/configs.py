"""DescribeConfigs: a topic's configs (its overrides in ZooKeeper over the broker's defaults), this broker's configs
or the cluster's dynamic broker defaults (the empty broker name), each with its source, synonyms and type
(broker/config_description.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from broker.apis.handler import Handled
from broker.config import BrokerConfig
from broker.config_description import BrokerConfigLayers, broker_config_entries, topic_config_entries
from broker.dynamic_config import DYNAMIC_CONFIGS
from broker.log.config import LogConfig, LogConfigError
from broker.network import Request, Response
from protocol.apis.configs import (
    ConfigEntry,
    ConfigResourceType,
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
    DescribeConfigsResult,
)
from protocol.errors import ErrorCode


class TopicNames(Protocol):
    """The topics that exist."""

    def topics(self) -> list[str]: ...


class TopicConfigSource(Protocol):
    """Where a topic's config overrides are read (the broker's own ZooKeeper work)."""

    async def topic_config(self, topic: str) -> dict[str, str]: ...


class BrokerConfigs(Protocol):
    """This broker's configs now: its log defaults and the layers they come from."""

    @property
    def log_defaults(self) -> LogConfig: ...

    def layers(self) -> BrokerConfigLayers: ...


class ConfigDescriber:
    """Describes this broker's configs and those of the topics."""

    def __init__(self, broker_id: int, config: BrokerConfig, topics: TopicNames, overrides: TopicConfigSource,
                 broker_configs: BrokerConfigs) -> None:
        self.broker_id = broker_id
        self.config = config
        self.topics = topics
        self.overrides = overrides
        self.broker_configs = broker_configs

    async def handle_describe_configs(self, body: DescribeConfigsRequest, _request: Request) -> Handled:
        return Response(DescribeConfigsResponse(results=[await self._describe(resource, body.include_synonyms)
                                                         for resource in body.resources]))

    def new_topic_configs(self, overrides: Mapping[str, str]) -> list[ConfigEntry]:
        """The configs of a topic created with `overrides`, as DescribeConfigs lists them (no synonyms)."""
        return topic_config_entries(self.broker_configs.log_defaults, overrides, None, False,
                                    self.broker_configs.layers())

    async def _describe(self, resource: DescribeConfigsResource, include_synonyms: bool) -> DescribeConfigsResult:
        result = DescribeConfigsResult(error_code=ErrorCode.NONE, resource_type=resource.resource_type,
                                       resource_name=resource.resource_name, configs=[])
        if resource.resource_type == ConfigResourceType.TOPIC:
            if resource.resource_name not in self.topics.topics():
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                result.error_message = f"topic {resource.resource_name} does not exist"
                return result
            try:
                overrides = await self.overrides.topic_config(resource.resource_name)
                result.configs = topic_config_entries(self.broker_configs.log_defaults, overrides,
                                                      resource.configuration_keys, include_synonyms,
                                                      self.broker_configs.layers())
            except LogConfigError as e:
                result.error_code, result.error_message = ErrorCode.INVALID_CONFIG, str(e)
        elif resource.resource_type == ConfigResourceType.BROKER and resource.resource_name in ("",
                                                                                             str(self.broker_id)):
            result.configs = broker_config_entries(
                self.broker_configs.layers(), resource.configuration_keys, self.config.group_coordinator.settings(),
                DYNAMIC_CONFIGS, include_synonyms=include_synonyms, per_broker=resource.resource_name != "")
        else:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = (f"broker {self.broker_id} cannot describe resource type {resource.resource_type} "
                                    f"named {resource.resource_name!r}")
        return result
