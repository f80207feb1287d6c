"""Every broker of a `cluster up` cluster serves Prometheus metrics at its `cluster status --json`
metrics_address, under the JMX exporter's names for Kafka's MBeans, and they move as Kafka's do while a follower
stops and comes back (SIGSTOP then SIGCONT: its leader shrinks the ISR, then expands it) and is killed and
restarted: under-replicated partitions rise and return to 0, ISR shrinks and expands are counted, and exactly one
broker is the active controller throughout."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Sequence

from prometheus_client.parser import text_string_to_metric_families

from client.admin import Admin
from client.cluster import ClusterState, start_broker
from tests.integration.clusterutil import (
    cluster_fixture,
    controller_of,
    create_topic,
    describe_topic,
    paused,
    produce_values,
    status_json,
    stop_broker,
)
from tests.polling import eventually

LAG_MS = 3000
cluster = cluster_fixture(brokers=3, configs={"replica.lag.time.max.ms": str(LAG_MS),
                                              "auto.leader.rebalance.enable": "false"})

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape_now(address: str) -> Samples:
    """Every sample of one broker's /metrics, by name and labels."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def scrape(addresses: dict[int, str], brokers: Sequence[int]) -> dict[int, Samples]:
    scraped = await asyncio.gather(*(asyncio.to_thread(scrape_now, addresses[b]) for b in brokers))
    return dict(zip(brokers, scraped, strict=True))


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def one_active_controller(scraped: dict[int, Samples]) -> bool:
    return sum(value(s, "kafka_controller_kafkacontroller_activecontrollercount") for s in scraped.values()) == 1


async def test_metrics_follow_a_follower_stopped_killed_and_restarted(cluster: ClusterState):
    addresses = {b["id"]: b["metrics_address"] for b in status_json(cluster.directory)["brokers"]}
    assert all(addresses.values()), addresses
    everyone = sorted(addresses)
    await create_topic(cluster, "watched", partitions=1, replication_factor=3)
    produced = await produce_values(cluster, "watched", [b"v%d" % i for i in range(20)])
    leader = (await describe_topic(cluster, "watched"))[0].leader
    controller, _epoch = await controller_of(cluster)
    follower = next(b for b in everyone if b not in (leader, controller))
    alive = [b for b in everyone if b != follower]

    async def leader_says(condition, what: str) -> dict[int, Samples]:
        async def probe() -> dict[int, Samples] | None:
            scraped = await scrape(addresses, alive)
            return scraped if condition(scraped[leader]) and one_active_controller(scraped) else None
        return await eventually(probe, what)

    before = await leader_says(lambda s: value(s, "kafka_server_replicamanager_underreplicatedpartitions") == 0,
                               "a healthy cluster")
    start = before[leader]
    assert value(start, "kafka_server_brokertopicmetrics_messagesin_total", topic="watched") == len(produced)
    assert value(start, "kafka_server_brokertopicmetrics_bytesin_total", topic="watched") > 0
    assert value(start, "kafka_network_requestmetrics_requests_total", request="Produce") >= 1
    assert value(start, "kafka_network_requestmetrics_totaltimems_count", request="Produce") >= 1
    assert value(start, "kafka_log_log_logendoffset", topic="watched", partition="0") == len(produced)
    assert value(start, "kafka_server_replicamanager_leadercount") >= 1
    assert 0 <= value(start, "kafka_network_socketserver_networkprocessoravgidlepercent") <= 1
    shrinks = value(start, "kafka_server_replicamanager_isrshrinks_total")
    expands = value(start, "kafka_server_replicamanager_isrexpands_total")

    async with paused(cluster, follower):
        await leader_says(lambda s: value(s, "kafka_server_replicamanager_underreplicatedpartitions") == 1
                          and value(s, "kafka_cluster_partition_underreplicated", topic="watched", partition="0") == 1
                          and value(s, "kafka_server_replicamanager_isrshrinks_total") > shrinks,
                          "the stopped follower out of the ISR, an ISR shrink counted")
    back = await leader_says(lambda s: value(s, "kafka_server_replicamanager_underreplicatedpartitions") == 0
                             and value(s, "kafka_server_replicamanager_isrexpands_total") > expands,
                             "the continued follower back in the ISR, an ISR expansion counted")
    expands = value(back[leader], "kafka_server_replicamanager_isrexpands_total")

    await stop_broker(cluster, follower, "KILL")
    await leader_says(lambda s: value(s, "kafka_server_replicamanager_underreplicatedpartitions") == 1,
                      "the killed follower out of the ISR")
    produced.update(await produce_values(cluster, "watched", [b"w%d" % i for i in range(10)]))
    await start_broker(cluster.directory, follower)
    alive = everyone
    healed = await leader_says(lambda s: value(s, "kafka_server_replicamanager_underreplicatedpartitions") == 0
                               and value(s, "kafka_server_replicamanager_isrexpands_total") > expands,
                               "the restarted follower back in the ISR, an ISR expansion counted")
    restarted = healed[follower]
    assert value(restarted, "kafka_log_log_logendoffset", topic="watched", partition="0") == len(produced)
    assert value(restarted, "kafka_server_replicafetchermanager_maxlag", clientId="Replica") == 0
    assert value(restarted, "kafka_server_brokertopicmetrics_replicationbytesin_total") > 0


async def test_the_coordinator_reports_a_groups_committed_offset_and_lag_and_the_handlers_idle_time(
        cluster: ClusterState):
    addresses = {b["id"]: b["metrics_address"] for b in status_json(cluster.directory)["brokers"]}
    await create_topic(cluster, "lagging", partitions=1, replication_factor=3)
    produced = await produce_values(cluster, "lagging", [b"l%d" % i for i in range(30)])
    async with Admin(cluster.bootstrap_servers) as admin:
        await admin.alter_group_offsets("lag-watchers", {("lagging", 0): 12})
    labels = {"consumergroup": "lag-watchers", "topic": "lagging", "partition": "0"}

    async def coordinator_reports() -> Samples | None:
        scraped = await scrape(addresses, sorted(addresses))
        reporting = [s for s in scraped.values() if ("kafka_consumergroup_current_offset",
                                                     tuple(sorted(labels.items()))) in s]
        return reporting[0] if len(reporting) == 1 and value(reporting[0], "kafka_consumergroup_lag",
                                                              **labels) == len(produced) - 12 else None

    samples = await eventually(coordinator_reports, "the group's coordinator (alone) reporting its offset and lag")
    assert value(samples, "kafka_consumergroup_current_offset", **labels) == 12
    assert 0 <= value(samples, "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent") <= 1
