"""Two listeners on real brokers, set through MINIKAFKA_CFG_* environment variables as a container would: every
endpoint is registered in ZooKeeper, brokers replicate and the controller connects over the inter-broker listener,
and Metadata answers with the endpoints of the listener a request came in on."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from client.admin import Admin, NewTopic
from client.cluster import log_tail
from client.consumer import Consumer
from client.producer import Producer
from protocol.apis.metadata import MetadataRequest, MetadataResponse
from tests.integration.clusterutil import broker_process, established_ports, terminate
from tests.integration.conftest import ZkSessionFactory
from tests.polling import eventually
from transport.connection import BrokerConnection, KafkaConnectionError
from zk.server import ZooKeeperServer, free_port

BROKER_IDS = (1, 2, 3)
RECORDS = 300


@dataclass(frozen=True)
class TwoListenerBroker:
    id: int
    internal_port: int  # INTERNAL://127.0.0.1:port, the inter-broker listener
    external_port: int  # EXTERNAL://127.0.0.1:port, advertised as localhost:port
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def external_bootstrap(self) -> str:
        return f"localhost:{self.external_port}"


def _environment(broker_id: int, internal: int, external: int) -> dict[str, str]:
    return {
        "MINIKAFKA_CFG_BROKER_ID": str(broker_id),
        "MINIKAFKA_CFG_LISTENERS": f"INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}",
        "MINIKAFKA_CFG_ADVERTISED_LISTENERS": f"INTERNAL://127.0.0.1:{internal},EXTERNAL://localhost:{external}",
        "MINIKAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "MINIKAFKA_CFG_INTER_BROKER_LISTENER_NAME": "INTERNAL",
    }


@pytest.fixture
def brokers(zookeeper: ZooKeeperServer, zk_chroot: str, tmp_path: Path) -> Iterator[list[TwoListenerBroker]]:
    """Three brokers whose server.properties name neither listeners nor broker.id: the environment does."""
    started: list[TwoListenerBroker] = []
    try:
        for broker_id in BROKER_IDS:
            directory = tmp_path / f"broker-{broker_id}"
            directory.mkdir()
            config = directory / "server.properties"
            config.write_text(f"broker.id=99\nlog.dirs={directory / 'data'}\n"
                              f"zookeeper.connect={zookeeper.connect_string}{zk_chroot}\n"
                              "zookeeper.session.timeout.ms=4000\nreplica.lag.time.max.ms=5000\n")
            internal, external = free_port(), free_port()
            log = directory / "server.log"
            process = broker_process(config, log, _environment(broker_id, internal, external))
            started.append(TwoListenerBroker(broker_id, internal, external, process, log))
        yield started
    finally:
        terminate([broker.process for broker in started])


async def _metadata(port: int) -> MetadataResponse | None:
    connection = BrokerConnection("127.0.0.1", port, request_timeout_ms=5000)
    try:
        await connection.connect()
        return await connection.request(MetadataRequest(topics=None))
    except KafkaConnectionError:
        return None
    finally:
        await connection.close()


def _logs(brokers: list[TwoListenerBroker]) -> str:
    return "\n".join(f"broker {b.id} (exit {b.process.poll()}):\n{log_tail(b.log, 15)}" for b in brokers)


async def test_clients_get_the_endpoints_of_their_listener_and_brokers_talk_over_the_internal_one(
    brokers: list[TwoListenerBroker], zk_session: ZkSessionFactory
):
    async def all_registered() -> bool | None:
        answers = [await _metadata(b.external_port) for b in brokers]
        ready = all(a is not None and len(a.brokers) == 3 and a.controller_id != -1 for a in answers)
        return True if ready else None

    await eventually(all_registered, lambda: f"three brokers answering on their external listeners\n{_logs(brokers)}")

    # Metadata names each broker by the listener the request came in on.
    external = await _metadata(brokers[0].external_port)
    internal = await _metadata(brokers[1].internal_port)
    assert external is not None and internal is not None
    assert [(b.node_id, b.host, b.port) for b in external.brokers] == [
        (b.id, "localhost", b.external_port) for b in brokers]
    assert [(b.node_id, b.host, b.port) for b in internal.brokers] == [
        (b.id, "127.0.0.1", b.internal_port) for b in brokers]

    # The registration holds both advertised endpoints; broker.id came from the environment, not the file's 99.
    async with zk_session() as zk:
        assert sorted(await zk.get_children("/brokers/ids")) == ["1", "2", "3"]
        for broker in brokers:
            data, _ = await zk.get(f"/brokers/ids/{broker.id}")
            registration = json.loads(data)
            assert registration["endpoints"] == [f"INTERNAL://127.0.0.1:{broker.internal_port}",
                                                 f"EXTERNAL://localhost:{broker.external_port}"]
            assert registration["listener_security_protocol_map"] == {"INTERNAL": "PLAINTEXT",
                                                                      "EXTERNAL": "PLAINTEXT"}

    # A client that only knows the external addresses creates, writes and reads a replicated topic.
    bootstrap = ",".join(b.external_bootstrap for b in brokers)
    async with Admin(bootstrap) as admin:
        await admin.create_topics([NewTopic("two-listeners", 3, 3, {"min.insync.replicas": "3"})])
    async with Producer(bootstrap, acks="all") as producer:
        futures = [await producer.send("two-listeners", f"record-{i}".encode()) for i in range(RECORDS)]
        await producer.flush()
        for future in futures:
            await future  # acks=all with min.insync.replicas=3: every follower fetched it
    async with Consumer(bootstrap) as consumer:
        consumer.assign([("two-listeners", p) for p in range(3)])
        await consumer.seek_to_beginning()
        values: set[bytes] = set()

        async def all_values() -> bool:
            values.update(r.value for r in await consumer.poll(timeout_ms=500))
            return len(values) >= RECORDS

        await eventually(all_values, lambda: f"{RECORDS} values (got {len(values)})", interval_s=0)
    assert values == {f"record-{i}".encode() for i in range(RECORDS)}

    # Brokers' connections to each other (fetchers, controller channel) go to internal ports only.
    internal_ports = {b.internal_port for b in brokers}
    external_ports = {b.external_port for b in brokers}
    for broker in brokers:
        remote = set(established_ports(broker.process.pid))
        others_internal = {b.internal_port for b in brokers if b.id != broker.id}
        assert remote & external_ports == set(), f"broker {broker.id} connects to an external listener"
        assert others_internal <= remote, f"broker {broker.id} fetches from both others on their internal ports"
    assert internal_ports.isdisjoint(external_ports)
