"""docker-compose.yml's secured option for real: with MINIKAFKA_SECURITY=sasl_ssl the brokers' published listeners
are SASL_SSL with SCRAM-SHA-512 and the admin user the first broker created; confluent-kafka on the host, with
the CA from the service's volume, creates a topic, produces with acks=all and reads every record back. Nothing of
the project is left behind."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.containers.podman import compose_project, podman, require_containers
from tests.polling import wait_for
from tests.stock_consumers import confluent_values

PASSWORD = "compose-admin-5b2c"
TOPIC = "secured"
RECORDS = 200
WAIT_S = 120.0


def test_the_secured_option_serves_sasl_ssl_with_scram_to_host_clients():
    require_containers()
    with compose_project() as project:
        project.env |= {"MINIKAFKA_SECURITY": "sasl_ssl", "MINIKAFKA_ADMIN_PASSWORD": PASSWORD}
        project.compose("--parallel", "1", "--podman-build-args=--network=none", "build", timeout=900)
        project.compose("up", "-d")
        volume = podman("volume", "inspect", "--format", "{{.Mountpoint}}", f"{project.name}_security").stdout
        ca = Path(volume.strip()) / "ca.pem"
        wait_for(lambda: ca.exists() and ca.stat().st_size > 0, "the first broker to write the CA",
                 timeout_s=WAIT_S, interval_s=0.5)
        settings = {"bootstrap.servers": project.bootstrap, "security.protocol": "sasl_ssl",
                    "ssl.ca.location": str(ca), "sasl.mechanism": "SCRAM-SHA-512",
                    "sasl.username": "admin", "sasl.password": PASSWORD}
        admin = AdminClient(settings)

        def three_brokers() -> bool:
            try:
                return len(admin.list_topics(timeout=5).brokers) == 3
            except KafkaException:  # not up yet
                return False

        wait_for(three_brokers, "three brokers answering over SASL_SSL", timeout_s=WAIT_S, interval_s=1.0)
        admin.create_topics([NewTopic(TOPIC, 3, 3)])[TOPIC].result(timeout=60)
        producer = Producer({**settings, "acks": "all"})
        for i in range(RECORDS):
            producer.produce(TOPIC, f"r-{i}".encode())
        assert producer.flush(60) == 0
        consumer = Consumer({**settings, "group.id": "secured", "auto.offset.reset": "earliest"})
        consumer.subscribe([TOPIC])
        confluent_values(consumer, RECORDS, "over SASL_SSL", timeout_s=WAIT_S)
        logs = "".join(result.stdout + result.stderr for result in (
            podman("logs", project.container(b), check=False) for b in ("broker-1", "broker-2", "broker-3")))
        assert PASSWORD not in logs
        project.compose("down", "-v", "-t", "5")
