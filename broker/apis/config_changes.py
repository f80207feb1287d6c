"""AlterConfigs and IncrementalAlterConfigs: any broker writes a topic's new overrides to /config/topics/<topic>
(zk/topic_config.py, as `minikafka topic alter --config` does), and a broker's dynamic configs to
/config/brokers/<id> (the broker's own id: the admin client sends them to that broker) or, for the empty name, the
cluster default /config/brokers/<default>, each with its change notification, which every broker and the
controller pick up. Topic overrides are checked as CreateTopics checks them, brokers' as broker/dynamic_config.py
says (INVALID_CONFIG). IncrementalAlterConfigs appends to and subtracts from list configs as Kafka does."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from broker.apis.handler import Handled
from broker.dynamic_config import check_dynamic_configs
from broker.log.config import BROKER_NAMES, THROTTLED_REPLICAS, TOPIC_NAMES, LogConfig
from broker.network import Request, Response
from protocol.apis.config_changes import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterConfigsResult,
    ConfigOperation,
    IncrementalAlterableConfig,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from protocol.apis.configs import ConfigResourceType
from protocol.errors import ErrorCode, KafkaError
from zk import znodes
from zk.client import ZkClient
from zk.topic_config import (
    BROKER_ENTITY,
    DEFAULT_BROKER,
    alter_entity_config,
    alter_topic_config,
    read_entity_config,
    read_topic_config,
)

Validate = Callable[[dict[str, str]], object]

#: The list-typed configs APPEND and SUBTRACT apply to, with Kafka's default (the value they change when unset).
_BUILT_IN = LogConfig()
LIST_CONFIGS: dict[int, dict[str, str]] = {
    ConfigResourceType.TOPIC: {name: ",".join(getattr(_BUILT_IN, field)) for name, field in TOPIC_NAMES.items()
                               if field in ("cleanup_policy", *THROTTLED_REPLICAS)},
    ConfigResourceType.BROKER: {name: ",".join(getattr(_BUILT_IN, field)) for name, field in BROKER_NAMES.items()
                                if field == "cleanup_policy"},
}


def incremental_changes(resource_type: int, current: Mapping[str, str], changes: list[IncrementalAlterableConfig]
                        ) -> tuple[dict[str, str | None], set[str]]:
    """(configs set, configs deleted) by IncrementalAlterConfigs' operations on `current` (Kafka's
    prepareIncrementalConfigs); KafkaError INVALID_REQUEST for APPEND or SUBTRACT on a config that is no list."""
    configs: dict[str, str | None] = {}
    deleted: set[str] = set()
    for change in changes:
        operation = change.config_operation
        if operation == ConfigOperation.SET:
            configs[change.name] = change.value
        elif operation == ConfigOperation.DELETE:
            deleted.add(change.name)
        elif operation in (ConfigOperation.APPEND, ConfigOperation.SUBTRACT):
            lists = LIST_CONFIGS.get(resource_type, {})
            verb = "append" if operation == ConfigOperation.APPEND else "subtract"
            if change.name not in lists:
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 f"Config value {verb} is not allowed for config key: {change.name}")
            old = configs.get(change.name) or current.get(change.name, lists[change.name])
            items = [item for item in (old or "").split(",") if item]
            given = [item for item in (change.value or "").split(",") if item]
            new = items + [item for item in given if item not in items] if verb == "append" else [
                item for item in items if item not in given]
            configs[change.name] = ",".join(new)
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {operation} for {change.name}")
    return configs, deleted


class ConfigChanges:
    """Answers AlterConfigs and IncrementalAlterConfigs by writing topics' overrides and brokers' dynamic configs
    to ZooKeeper."""

    def __init__(self, zk: ZkClient, validate: Validate, broker_id: int = -1,
                 static_properties: Mapping[str, str] | None = None) -> None:
        self._zk = zk
        self._validate = validate
        self._broker_id = broker_id
        self._static = dict(static_properties or {})

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
            kind, name = resource.resource_type, resource.resource_name
            try:
                current = await self._current(kind, name)
                configs, deleted = incremental_changes(kind, current, resource.configs)
            except KafkaError as e:
                results.append(_result(kind, name, e.code, e.message))
                continue
            results.append(await self._change(kind, name, configs, deleted, body.validate_only, replace_all=False))
        return Response(IncrementalAlterConfigsResponse(responses=results))

    def _broker_entity(self, name: str) -> str:
        """The ZooKeeper entity of a broker resource: <default> for the empty name, else this broker's id."""
        if name == "":
            return DEFAULT_BROKER
        if name != str(self._broker_id):
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Unexpected broker id, expected {self._broker_id}, but received {name}")
        return name

    async def _current(self, resource_type: int, name: str) -> dict[str, str]:
        if resource_type == ConfigResourceType.BROKER:
            return await read_entity_config(self._zk, BROKER_ENTITY, self._broker_entity(name))
        if resource_type == ConfigResourceType.TOPIC:
            return await read_topic_config(self._zk, name)
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"configs of resource type {resource_type} cannot be altered")

    async def _change(self, resource_type: int, name: str, configs: Mapping[str, str | None], deleted: Iterable[str],
                      validate_only: bool, *, replace_all: bool) -> AlterConfigsResult:
        nulls = [key for key, value in configs.items() if value is None]
        if nulls:
            return _result(resource_type, name, ErrorCode.INVALID_REQUEST,
                           f"Null value not supported for: {', '.join(nulls)}")
        values = {key: value for key, value in configs.items() if value is not None}
        try:
            current = await self._current(resource_type, name)
            removed = set(current) - set(values) if replace_all else set(deleted)
            merged = {k: v for k, v in current.items() if k not in removed} | values
            if resource_type == ConfigResourceType.BROKER:
                entity = self._broker_entity(name)
                check_dynamic_configs(self._static, merged)
                if not validate_only:
                    await alter_entity_config(self._zk, BROKER_ENTITY, entity, values, removed,
                                              check=lambda new: check_dynamic_configs(self._static, new))
            elif validate_only:
                await self._check(name, merged)
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
