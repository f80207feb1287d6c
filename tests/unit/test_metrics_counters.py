"""The broker's metric counters: request times land in their buckets, quantiles are read back from them, errors
are counted by code, and each topic has its own counts."""

from __future__ import annotations

import pytest

from broker.metrics.counters import TIME_BOUNDS_MS, BrokerCounters, RequestCounters


def test_request_times_give_their_quantiles_within_the_bucket_bounds():
    counters = RequestCounters()
    for _ in range(90):
        counters.record(0.3, 0)
    for _ in range(10):
        counters.record(40.0, 0)
    assert counters.requests == 100
    assert counters.time_sum_ms == pytest.approx(90 * 0.3 + 10 * 40.0)
    assert 0 < counters.quantile(0.5) <= TIME_BOUNDS_MS[0]
    assert 25.0 < counters.quantile(0.99) <= 50.0


def test_a_request_slower_than_every_bound_counts_in_the_last_bucket():
    counters = RequestCounters()
    counters.record(TIME_BOUNDS_MS[-1] * 2, 0)
    assert counters.time_buckets[-1] == 1
    assert counters.quantile(0.5) == TIME_BOUNDS_MS[-1]


def test_no_request_has_quantiles_of_zero():
    assert RequestCounters().quantile(0.99) == 0.0


def test_errors_are_counted_by_code_and_success_is_not_an_error():
    counters = BrokerCounters()
    produce = counters.request("Produce")
    produce.record(1.0, 0)
    produce.record(1.0, 6)
    produce.record(1.0, 6)
    assert counters.request("Produce") is produce
    assert produce.errors == {6: 2}


def test_each_topic_counts_on_its_own():
    counters = BrokerCounters()
    counters.topic("a").bytes_in += 10
    counters.topic("b").messages_in += 1
    assert (counters.topic("a").bytes_in, counters.topic("a").messages_in) == (10, 0)
    assert (counters.topic("b").bytes_in, counters.topic("b").messages_in) == (0, 1)
