"""The broker's metrics at scrape time, under the names the Prometheus JMX exporter's Kafka rules give Kafka's
MBeans (kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions is
kafka_server_replicamanager_underreplicatedpartitions), so that Kafka's dashboards and alerts apply. The few
without a Kafka MBean (the controller epoch, a replica's HW) are named minikafka_*."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector

from broker.metrics.counters import QUANTILES, BrokerCounters
from broker.network import SocketServer
from broker.replication.fetcher import ReplicaFetcherManager
from broker.replication.replica_manager import ReplicaManager
from protocol.errors import ErrorCode
from protocol.topic_partition import TopicPartition

PARTITION_LABELS = ["topic", "partition"]


@dataclass(frozen=True, slots=True)
class ControllerGauges:
    """The controller's side of the metrics (offline partitions and the global counts: 0 unless active)."""

    active: bool
    epoch: int
    offline_partitions: int
    topics: int
    partitions: int


class BrokerCollector(Collector):
    """Reads the broker's counters and state each time it is scraped (on the broker's event loop)."""

    def __init__(self, replica_manager: ReplicaManager, controller: Callable[[], ControllerGauges],
                 fetchers: ReplicaFetcherManager, socket_server: SocketServer,
                 committed_offsets: Callable[[], Iterable[tuple[str, TopicPartition, int]]] = tuple) -> None:
        self._replica_manager = replica_manager
        self._controller = controller
        self._fetchers = fetchers
        self._socket_server = socket_server
        self._committed_offsets = committed_offsets
        self._last_clocks = self._clocks()

    def collect(self) -> Iterator[Metric]:
        counters = self._replica_manager.counters
        yield from self._replica_manager_metrics(counters)
        yield from self._partition_metrics()
        yield from self._controller_metrics()
        yield from _topic_metrics(counters)
        yield from _request_metrics(self._socket_server.counters)
        yield _gauge("kafka_server_replicafetchermanager_maxlag", "Largest lag of a followed partition behind its "
                     "leader's HW (MaxLag)", self._fetchers.max_lag(), clientId="Replica")
        yield self._fetcher_lags()
        yield _gauge("kafka_network_requestchannel_requestqueuesize", "Requests waiting for a handler task",
                     self._socket_server.channel.size())
        network_idle, handlers_idle = self._idle_fractions()
        yield _gauge("kafka_network_socketserver_networkprocessoravgidlepercent", "Fraction of the time since the "
                     "last scrape the event loop (which serves the network) spent idle", network_idle)
        yield _gauge("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent", "Fraction of the time "
                     "since the last scrape the request handler tasks spent waiting for a request", handlers_idle)
        yield from self._group_metrics()

    def _clocks(self) -> tuple[float, float, float]:
        return time.monotonic(), time.thread_time(), self._socket_server.handler_busy_s

    def _idle_fractions(self) -> tuple[float, float]:
        """Since the last scrape: 1 - the event loop thread's CPU time over the wall time (scrapes run on it), and
        1 - the handler tasks' busy time over their wall time."""
        (wall, cpu, busy), (last_wall, last_cpu, last_busy) = self._clocks(), self._last_clocks
        self._last_clocks = (wall, cpu, busy)
        elapsed = wall - last_wall
        if elapsed <= 0:
            return 1.0, 1.0
        handlers = max(1, self._socket_server.config.num_io_threads)
        return _fraction(1.0 - (cpu - last_cpu) / elapsed), _fraction(1.0 - (busy - last_busy) / elapsed / handlers)

    def _group_metrics(self) -> Iterator[Metric]:
        """The committed offsets of the groups this broker coordinates and their lag, under kafka_exporter's names
        (Kafka has no broker MBean for them). The lag is the HW of this broker's replica minus the committed offset:
        exact where this broker leads the partition, at most a fetch behind on a follower, and left out where it
        holds no replica."""
        labels = ["consumergroup", "topic", "partition"]
        current = GaugeMetricFamily("kafka_consumergroup_current_offset", "A group's committed offset", labels=labels)
        lag = GaugeMetricFamily("kafka_consumergroup_lag", "A partition's high watermark minus the group's committed "
                                "offset", labels=labels)
        partitions = self._replica_manager.partitions
        for group_id, tp, offset in sorted(self._committed_offsets()):
            values = [group_id, tp.topic, str(tp.partition)]
            current.add_metric(values, float(offset))
            replica = partitions.get(tp)
            if replica is not None:
                lag.add_metric(values, float(max(0, replica.log.high_watermark - offset)))
        yield from (current, lag)

    def _replica_manager_metrics(self, counters: BrokerCounters) -> Iterator[Metric]:
        partitions = list(self._replica_manager.partitions.values())
        led = [p for p in partitions if p.is_leader]
        under_min = sum(len(p.isr) < p.effective_min_isr for p in led)
        at_min = sum(len(p.isr) == p.effective_min_isr for p in led)
        prefix = "kafka_server_replicamanager_"
        yield _gauge(prefix + "underreplicatedpartitions", "Partitions led here whose ISR is smaller than their "
                     "replicas", sum(len(p.isr) < len(p.replicas) for p in led))
        yield _gauge(prefix + "underminisrpartitioncount", "Partitions led here with an ISR under min.insync.replicas",
                     under_min)
        yield _gauge(prefix + "atminisrpartitioncount", "Partitions led here with an ISR at min.insync.replicas",
                     at_min)
        yield _gauge(prefix + "leadercount", "Partitions this broker leads", len(led))
        yield _gauge(prefix + "partitioncount", "Partitions this broker hosts", len(partitions))
        yield CounterMetricFamily(prefix + "isrshrinks", "ISR shrinks of partitions led here",
                                  value=counters.isr_shrinks)
        yield CounterMetricFamily(prefix + "isrexpands", "ISR expansions of partitions led here",
                                  value=counters.isr_expands)

    def _fetcher_lags(self) -> Metric:
        """Kafka's FetcherLagMetrics: each followed partition's lag, labelled with the fetcher that follows it."""
        family = GaugeMetricFamily("kafka_server_fetcherlagmetrics_consumerlag", "Lag of a followed partition "
                                   "behind its leader's HW, by fetcher", labels=["clientId", "topic", "partition"])
        for client_id, tp, lag in self._fetchers.lags():
            family.add_metric([client_id, tp.topic, str(tp.partition)], lag)
        return family

    def _partition_metrics(self) -> Iterator[Metric]:
        """Kafka's kafka.cluster:type=Partition and kafka.log:type=Log gauges, per hosted partition (the ISR's
        are 0 where this broker does not lead, as in Kafka)."""
        families = {name: GaugeMetricFamily(name, doc, labels=PARTITION_LABELS) for name, doc in (
            ("kafka_cluster_partition_underreplicated", "1 if led here and the ISR is smaller than the replicas"),
            ("kafka_cluster_partition_underminisr", "1 if led here and the ISR is under min.insync.replicas"),
            ("kafka_cluster_partition_atminisr", "1 if led here and the ISR is at min.insync.replicas"),
            ("kafka_cluster_partition_insyncreplicascount", "The ISR's size if led here, else 0"),
            ("kafka_cluster_partition_replicascount", "The replicas' count if led here, else 0"),
            ("kafka_log_log_size", "Bytes of the replica's log"),
            ("kafka_log_log_numlogsegments", "Segments of the replica's log"),
            ("kafka_log_log_logstartoffset", "The replica's log start offset"),
            ("kafka_log_log_logendoffset", "The replica's log end offset (LEO)"),
            ("minikafka_log_highwatermark", "The replica's high watermark"),
        )}
        for tp, p in sorted(self._replica_manager.partitions.items()):
            labels = [tp.topic, str(tp.partition)]
            leader, isr, log = p.is_leader, len(p.isr), p.log
            values = (
                leader and isr < len(p.replicas), leader and isr < p.effective_min_isr,
                leader and isr == p.effective_min_isr, isr if leader else 0, len(p.replicas) if leader else 0,
                log.size_in_bytes, len(log.segments), log.log_start_offset, log.log_end_offset, log.high_watermark,
            )
            for family, value in zip(families.values(), values, strict=True):
                family.add_metric(labels, float(value))
        yield from families.values()

    def _controller_metrics(self) -> Iterator[Metric]:
        gauges = self._controller()
        prefix = "kafka_controller_kafkacontroller_"
        yield _gauge(prefix + "activecontrollercount", "1 on the active controller", int(gauges.active))
        yield _gauge(prefix + "offlinepartitionscount", "Partitions without a live leader (on the active controller)",
                     gauges.offline_partitions)
        yield _gauge(prefix + "globaltopiccount", "Topics (on the active controller)", gauges.topics)
        yield _gauge(prefix + "globalpartitioncount", "Partitions (on the active controller)", gauges.partitions)
        yield _gauge("minikafka_controller_epoch", "The controller epoch this broker last heard of",
                     max(gauges.epoch, self._replica_manager.controller_epoch))


def _fraction(value: float) -> float:
    return min(1.0, max(0.0, value))


def _gauge(name: str, doc: str, value: float, **labels: str) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=list(labels))
    family.add_metric(list(labels.values()), float(value))
    return family


def _topic_metrics(counters: BrokerCounters) -> Iterator[Metric]:
    """Kafka's BrokerTopicMetrics: per topic, and replication's bytes for the broker."""
    prefix = "kafka_server_brokertopicmetrics_"
    bytes_in = CounterMetricFamily(prefix + "bytesin", "Bytes appended as leader", labels=["topic"])
    messages_in = CounterMetricFamily(prefix + "messagesin", "Records appended as leader", labels=["topic"])
    bytes_out = CounterMetricFamily(prefix + "bytesout", "Bytes read by consumers", labels=["topic"])
    for topic, c in sorted(counters.topics.items()):
        bytes_in.add_metric([topic], c.bytes_in)
        messages_in.add_metric([topic], c.messages_in)
        bytes_out.add_metric([topic], c.bytes_out)
    yield from (bytes_in, messages_in, bytes_out)
    yield CounterMetricFamily(prefix + "replicationbytesin", "Bytes fetched from leaders",
                              value=counters.replication_bytes_in)
    yield CounterMetricFamily(prefix + "replicationbytesout", "Bytes read by followers",
                              value=counters.replication_bytes_out)


def _request_metrics(counters: BrokerCounters) -> Iterator[Metric]:
    """Kafka's RequestMetrics per request name: requests, errors by code, and the total time (the quantiles
    Kafka's histograms report, with their count and sum)."""
    prefix = "kafka_network_requestmetrics_"
    requests = CounterMetricFamily(prefix + "requests", "Requests answered", labels=["request"])
    errors = CounterMetricFamily(prefix + "errors", "Requests answered with an error, by error",
                                 labels=["request", "error"])
    time_ms = SummaryMetricFamily(prefix + "totaltimems", "Time from reading a request to its response (ms)",
                                  labels=["request"])
    for name, c in sorted(counters.requests.items()):
        requests.add_metric([name], c.requests)
        for code, count in sorted(c.errors.items()):
            errors.add_metric([name, _error_name(code)], count)
        time_ms.add_metric([name], c.requests, c.time_sum_ms)
        for q in QUANTILES:
            time_ms.add_sample(time_ms.name, {"request": name, "quantile": str(q)}, c.quantile(q))
    yield from (requests, errors, time_ms)


def _error_name(code: int) -> str:
    return ErrorCode.from_code(code).name
