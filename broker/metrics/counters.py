"""The counts the broker keeps as it works: plain ints bumped inline on the request paths, read only when a
scrape asks (so the hot path pays an attribute increment, never a metrics library call)."""

from __future__ import annotations

from bisect import bisect_left

#: Upper bounds (ms) of the request time buckets; a last bucket holds everything slower.
TIME_BOUNDS_MS = (0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0, 30000.0)
#: The percentiles Kafka's request histograms report (the JMX exporter's quantile label).
QUANTILES = (0.5, 0.75, 0.95, 0.98, 0.99, 0.999)


class TopicCounters:
    """Kafka's BrokerTopicMetrics of one topic: bytes and messages appended as leader, bytes read by consumers."""

    __slots__ = ("bytes_in", "bytes_out", "messages_in")

    def __init__(self) -> None:
        self.bytes_in = 0
        self.messages_in = 0
        self.bytes_out = 0


class RequestCounters:
    """Kafka's RequestMetrics of one request name: how many, their errors by code, and their total time."""

    __slots__ = ("errors", "requests", "time_buckets", "time_sum_ms")

    def __init__(self) -> None:
        self.requests = 0
        self.errors: dict[int, int] = {}
        self.time_buckets = [0] * (len(TIME_BOUNDS_MS) + 1)
        self.time_sum_ms = 0.0

    def record(self, elapsed_ms: float, error_code: int) -> None:
        self.requests += 1
        self.time_sum_ms += elapsed_ms
        self.time_buckets[bisect_left(TIME_BOUNDS_MS, elapsed_ms)] += 1
        if error_code:
            self.errors[error_code] = self.errors.get(error_code, 0) + 1

    def quantile(self, q: float) -> float:
        """The q-quantile of the total time (ms), interpolated inside its bucket; 0 before any request."""
        rank = q * self.requests
        seen = 0
        for i, count in enumerate(self.time_buckets):
            if count and seen + count >= rank:
                low = TIME_BOUNDS_MS[i - 1] if i else 0.0
                high = TIME_BOUNDS_MS[i] if i < len(TIME_BOUNDS_MS) else low
                return low + (high - low) * (rank - seen) / count
            seen += count
        return 0.0


class BrokerCounters:
    """Every count a broker keeps for its metrics (the gauges are read from its state at scrape time)."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicCounters] = {}
        self.requests: dict[str, RequestCounters] = {}
        self.isr_shrinks = 0
        self.isr_expands = 0
        self.replication_bytes_in = 0
        self.replication_bytes_out = 0

    def topic(self, name: str) -> TopicCounters:
        counters = self.topics.get(name)
        if counters is None:
            counters = self.topics[name] = TopicCounters()
        return counters

    def request(self, name: str) -> RequestCounters:
        counters = self.requests.get(name)
        if counters is None:
            counters = self.requests[name] = RequestCounters()
        return counters
