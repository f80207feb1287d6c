"""The partitions this broker hosts, as the request handlers and the fetchers reach them: one hub over the rooms
that do the work (transitions.py, produce_path.py, fetch_path.py, offsets.py, isr_manager.py, background.py)."""

from __future__ import annotations

import asyncio

from broker.config import BrokerConfig
from broker.log.log import Clock, Log
from broker.log.manager import LogManager
from broker.metrics.counters import BrokerCounters
from broker.replication import offsets, producers
from broker.replication.background import BackgroundTasks
from broker.replication.fetch_path import FetchPath
from broker.replication.hosted import HostedPartitions
from broker.replication.isr_manager import IsrManager, IsrWriter
from broker.replication.parked import ParkedRequests
from broker.replication.partition import Partition
from broker.replication.produce_path import ProducePath
from broker.replication.transitions import (
    FollowCallback,
    LeadershipCallback,
    ReplicaTransitions,
    StopFollowingCallback,
    TopicConfigSource,
)
from protocol.apis.fetch import FetchRequest, FetchResponse
from protocol.apis.offsets import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from protocol.apis.produce import ProduceRequest, ProduceResponse
from protocol.apis.producers import DescribeProducersRequest, DescribeProducersResponse
from protocol.apis.records_deletion import DeleteRecordsRequest, DeleteRecordsResponse
from protocol.apis.replica_control import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
)
from protocol.topic_partition import TopicPartition


class ReplicaManager:
    """Hosts this broker's partitions and applies the controller's decisions to them; serves the produce, fetch and
    offset requests on them; keeps their ISRs and their periodic work."""

    def __init__(self, config: BrokerConfig, log_manager: LogManager, topic_config: TopicConfigSource,
                 isr_writer: IsrWriter, clock: Clock) -> None:
        self.config = config
        #: What the request paths count for the broker's metrics.
        self.counters = counters = BrokerCounters()
        self._hosted = hosted = HostedPartitions(config.broker_id)
        self.partitions = hosted.partitions
        self._parked = parked = ParkedRequests()
        self._isr = IsrManager(config.broker_id, config.replica_lag_time_max_ms, hosted.partitions, isr_writer,
                               parked.wake_soon, counters)
        self._background = BackgroundTasks(config, log_manager, clock, self._isr.maybe_shrink)
        self._produce = ProducePath(hosted, parked, self._background.schedule_flush, counters)
        self._fetch = FetchPath(config, hosted, parked, self._isr, clock, counters)
        self._transitions = ReplicaTransitions(config, log_manager, topic_config, clock, hosted, self._produce,
                                               parked.wake_all, self._background.run_in_thread)

    # -- the controller's requests ----------------------------------------------------------

    @property
    def controller_epoch(self) -> int:
        """The latest controller epoch this broker heard from (older controllers' requests are refused)."""
        return self._transitions.controller_epoch

    @controller_epoch.setter
    def controller_epoch(self, epoch: int) -> None:
        self._transitions.controller_epoch = epoch

    async def become_leader_or_follower(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        return await self._transitions.become_leader_or_follower(request)

    def stop_replicas(self, request: StopReplicaRequest) -> StopReplicaResponse:
        return self._transitions.stop_replicas(request)

    # -- the fetchers -----------------------------------------------------------------------

    @property
    def on_follow(self) -> FollowCallback:
        """Called with the partitions that became followers (and their leaders' ids) and the leaders' endpoints."""
        return self._transitions.on_follow

    @on_follow.setter
    def on_follow(self, callback: FollowCallback) -> None:
        self._transitions.on_follow = callback

    @property
    def on_stop_following(self) -> StopFollowingCallback:
        """Called with the partitions that stopped following."""
        return self._transitions.on_stop_following

    @on_stop_following.setter
    def on_stop_following(self, callback: StopFollowingCallback) -> None:
        self._transitions.on_stop_following = callback

    @property
    def on_leadership_change(self) -> LeadershipCallback:
        """Called with the partitions this broker became leader of and those it no longer leads."""
        return self._transitions.on_leadership_change

    @on_leadership_change.setter
    def on_leadership_change(self, callback: LeadershipCallback) -> None:
        self._transitions.on_leadership_change = callback

    def partition(self, tp: TopicPartition) -> Partition[Log] | None:
        return self._hosted.get(tp)

    def update_min_insync_replicas(self, tp: TopicPartition, min_insync_replicas: int) -> None:
        """A hosted partition's min.insync.replicas changed (its topic's override, or the broker's dynamic default);
        a leader whose high watermark it held back moves it, and what waits on it is woken."""
        partition = self._hosted.get(tp)
        if partition is None or partition.min_insync_replicas == min_insync_replicas:
            return
        partition.min_insync_replicas = min_insync_replicas
        if partition.is_leader and partition.maybe_increment_leader_hw():
            self._parked.wake_soon(tp)

    def on_follower_append(self, partition: Partition[Log], flush_needed: bool) -> None:
        """Called by the fetcher after it appended to a follower replica."""
        if flush_needed:
            self._background.schedule_flush(partition.log)

    # -- clients' and followers' requests ---------------------------------------------------

    def append_records(self, request: ProduceRequest, internal_topics_allowed: bool = False
                       ) -> ProduceResponse | asyncio.Future[ProduceResponse]:
        """Append to each partition as leader (produce_path.py); acks=all answers once the HW passes the batches.
        Only the broker's own coordinators may append to internal topics."""
        return self._produce.append_records(request, internal_topics_allowed)

    def fetch(self, request: FetchRequest) -> FetchResponse | asyncio.Future[FetchResponse]:
        """Serve a fetch (fetch_path.py), at once or once there is data."""
        return self._fetch.fetch(request)

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        return offsets.list_offsets(self._hosted, request)

    def offsets_for_leader_epoch(self, request: OffsetsForLeaderEpochRequest) -> OffsetsForLeaderEpochResponse:
        return offsets.offsets_for_leader_epoch(self._hosted, request)

    def delete_records(self, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
        return offsets.delete_records(self._hosted, request)

    def describe_producers(self, request: DescribeProducersRequest) -> DescribeProducersResponse:
        return producers.describe_producers(self._hosted, request)

    def describe(self, topics: list[str] | None) -> list[Partition[Log]]:
        return self._hosted.describe(topics)

    # -- start and shutdown -----------------------------------------------------------------

    def start(self) -> None:
        """Start the periodic tasks, as Kafka schedules them."""
        self._background.start()

    async def shutdown(self) -> None:
        """Stop periodic work, answer every parked request, wait for flushes and ISR writes."""
        self._parked.complete_all()
        waiting = self._background.stop()
        await asyncio.gather(*waiting, *self._isr.updates_under_way(), return_exceptions=True)

