"""AlterConfigs and IncrementalAlterConfigs for topics: any broker writes the new overrides to /config/topics/<topic>
with a change notification (zk/topic_config.py, as `minikafka topic alter --config` does), which every broker and
the controller pick up. Overrides are checked as CreateTopics checks them (INVALID_CONFIG); brokers' dynamic configs
are not kept: setting one is refused with INVALID_REQUEST, deleting them succeeds (there is none to delete; Kafka's
kafka-reassign-partitions --verify clears its throttles so)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.apis.config_changes import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterConfigsResult,
    ConfigOperation,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from protocol.apis.configs import ConfigResourceType
from protocol.errors import ErrorCode, KafkaError
from zk import znodes
from zk.client import ZkClient
from zk.topic_config import alter_topic_config, read_topic_config

Validate = Callable[[dict[str, str]], object]


class TopicConfigChanges:
    """Answers AlterConfigs and IncrementalAlterConfigs by writing topics' overrides to ZooKeeper."""

    def __init__(self, zk: ZkClient, validate: Validate) -> None:
        self._zk = zk
        self._validate = validate

    async def handle_alter_configs(self, body: AlterConfigsRequest, _request: Request) -> Handled:
        results = []
        for resource in body.resources:
            configs = {c.name: c.value for c in resource.configs}
            results.append(await self._change(resource.resource_type, resource.resource_name, configs, (),
                                              body.validate_only, replace_all=True))
        return Response(AlterConfigsResponse(responses=results))

    async def handle_incremental_alter_configs(self, body: IncrementalAlterConfigsRequest, _request: Request
                                               ) -> Handled:
        results = []
        for resource in body.resources:
            unsupported = [c.name for c in resource.configs
                           if c.config_operation not in (ConfigOperation.SET, ConfigOperation.DELETE)]
            if unsupported:
                results.append(_result(resource.resource_type, resource.resource_name, ErrorCode.INVALID_REQUEST,
                                       f"only SET and DELETE are served, not for {', '.join(unsupported)}"))
                continue
            configs = {c.name: c.value for c in resource.configs if c.config_operation == ConfigOperation.SET}
            deleted = [c.name for c in resource.configs if c.config_operation == ConfigOperation.DELETE]
            results.append(await self._change(resource.resource_type, resource.resource_name, configs, deleted,
                                              body.validate_only, replace_all=False))
        return Response(IncrementalAlterConfigsResponse(responses=results))

    async def _change(self, resource_type: int, name: str, configs: Mapping[str, str | None], deleted: Iterable[str],
                      validate_only: bool, *, replace_all: bool) -> AlterConfigsResult:
        if resource_type == ConfigResourceType.BROKER and not configs and not replace_all:
            return _result(resource_type, name, ErrorCode.NONE, None)  # none kept: deleting any is done already
        if resource_type != ConfigResourceType.TOPIC:
            return _result(resource_type, name, ErrorCode.INVALID_REQUEST,
                           "only topics' configs can be altered (brokers' dynamic configs are not kept)")
        nulls = [key for key, value in configs.items() if value is None]
        if nulls:
            return _result(resource_type, name, ErrorCode.INVALID_REQUEST,
                           f"Null value not supported for: {', '.join(nulls)}")
        values = {key: value for key, value in configs.items() if value is not None}
        try:
            current = await read_topic_config(self._zk, name)
            removed = set(current) - set(values) if replace_all else set(deleted)
            if validate_only:
                await self._check(name, {k: v for k, v in current.items() if k not in removed} | values)
            else:
                await alter_topic_config(self._zk, name, values, removed, validate=self._validate)
        except KafkaError as e:
            return _result(resource_type, name, e.code, e.message)
        return _result(resource_type, name, ErrorCode.NONE, None)

    async def _check(self, topic: str, overrides: dict[str, str]) -> None:
        if await self._zk.exists(znodes.topic_path(topic)) is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{topic}' does not exist.")
        try:
            self._validate(overrides)
        except ValueError as e:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid config for topic '{topic}': {e}") from None


def _result(resource_type: int, name: str, code: ErrorCode, message: str | None) -> AlterConfigsResult:
    return AlterConfigsResult(error_code=code, error_message=message, resource_type=resource_type,
                              resource_name=name)
