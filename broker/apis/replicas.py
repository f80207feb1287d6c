"""DescribeReplicas: the replicas this broker hosts, with their roles and offsets, and on a leader its followers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from broker.apis.handler import Handled
from broker.log.log import Log
from broker.network import Request, Response
from broker.replication.partition import Partition
from protocol.apis.replicas import (
    DescribedReplica,
    DescribeReplicasRequest,
    DescribeReplicasResponse,
    EpochStart,
    FollowerState,
)


class ReplicaDescriber(Protocol):
    """Where the hosted replicas are found, and the newest controller epoch seen."""

    @property
    def controller_epoch(self) -> int: ...

    def describe(self, topics: list[str] | None) -> Iterable[Partition[Log]]: ...


async def handle_describe_replicas(broker_id: int, replicas: ReplicaDescriber, body: DescribeReplicasRequest,
                                   _request: Request) -> Handled:
    partitions = []
    for partition in replicas.describe(body.topics):
        partition_log = partition.log
        partitions.append(DescribedReplica(
            topic=partition.tp.topic, partition=partition.tp.partition, role=partition.role.value,
            leader=partition.leader_id, leader_epoch=partition.leader_epoch,
            log_end_offset=partition_log.log_end_offset, high_watermark=partition_log.high_watermark,
            log_start_offset=partition_log.log_start_offset, isr=sorted(partition.isr),
            followers=[FollowerState(broker_id=r.broker_id, log_end_offset=r.log_end_offset,
                                     last_caught_up_time_ms=r.last_caught_up_time_ms,
                                     last_fetch_time_ms=r.last_fetch_time_ms)
                       for r in partition.remote_replicas.values()],
            min_insync_replicas=partition.min_insync_replicas,
            leader_epochs=[EpochStart(epoch=e.epoch, start_offset=e.start_offset)
                           for e in partition_log.epoch_cache.entries]))
    return Response(DescribeReplicasResponse(broker_id=broker_id, partitions=partitions,
                                             controller_epoch=replicas.controller_epoch))
