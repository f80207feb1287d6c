"""InitProducerId on Kafka's wire from v3: a producer asking again names its id and epoch; an idempotent one gets a
new id, as Kafka gives it (no transactional id), and a request naming one without the other is INVALID_REQUEST.
DescribeProducers of a partition this broker does not host."""

from __future__ import annotations

import asyncio

import pytest

from broker.apis.producer_ids import handle_init_producer_id
from broker.network import Response
from broker.replication.hosted import HostedPartitions
from broker.replication.producers import describe_producers
from protocol.apis import KAFKA_APIS
from protocol.apis.api import ApiKey
from protocol.apis.producers import DescribeProducersRequest, DescribeProducersTopic
from protocol.errors import ErrorCode
from protocol.kafka import codec


class Ids:
    def __init__(self) -> None:
        self.next = 1000

    async def generate_producer_id(self) -> int:
        self.next += 1
        return self.next


def init_producer_id(version: int, producer_id: int, producer_epoch: int, ids: Ids) -> tuple[int, int, int]:
    """(error code, producer id, epoch) answered to a Kafka InitProducerId of `version`, decoded and encoded."""
    api = KAFKA_APIS[ApiKey.INIT_PRODUCER_ID]
    frame = codec.encode("InitProducerIdRequest", version, {
        "transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": producer_id,
        "producer_epoch": producer_epoch})
    response = asyncio.run(handle_init_producer_id(ids, api.decode(frame, 0, version), None))  # type: ignore[arg-type]
    assert isinstance(response, Response)
    answer = codec.decode("InitProducerIdResponse", version, b"".join(api.encode(response.body, version, None)))
    return answer["error_code"], answer["producer_id"], answer["producer_epoch"]


@pytest.mark.parametrize("version", [3, 4, 5])
def test_a_producer_naming_its_id_and_epoch_gets_a_new_id(version: int) -> None:
    ids = Ids()
    assert init_producer_id(version, -1, -1, ids) == (ErrorCode.NONE, 1001, 0)
    assert init_producer_id(version, 1001, 3, ids) == (ErrorCode.NONE, 1002, 0)


@pytest.mark.parametrize(("producer_id", "producer_epoch"), [(1001, -1), (-1, 0)])
def test_an_id_without_an_epoch_or_an_epoch_without_an_id_is_invalid(producer_id: int, producer_epoch: int) -> None:
    ids = Ids()
    assert init_producer_id(5, producer_id, producer_epoch, ids) == (ErrorCode.INVALID_REQUEST, -1, -1)
    assert ids.next == 1000


def test_describe_producers_of_a_partition_not_hosted_is_unknown_topic_or_partition() -> None:
    request = DescribeProducersRequest(topics=[DescribeProducersTopic(name="orders", partition_indexes=[0, 3])])
    [topic] = describe_producers(HostedPartitions(1), request).topics
    assert [(p.partition_index, p.error_code, p.active_producers) for p in topic.partitions] == [
        (0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []), (3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
