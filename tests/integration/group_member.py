"""One member of a consumer group in a process of its own, for the tests that kill members and coordinators:
a confluent-kafka consumer subscribed to a topic that reads its records one at a time, commits each one
synchronously, and says on stdout, one JSON object a line, what happened: `assigned` (its whole assignment, after
each rebalance), `revoked`, `record` (partition, offset) and `committed` (partition, the offset acknowledged);
SIGTERM makes it leave the group cleanly (close), SIGKILL does not. `MemberProcess` starts one and follows what it
says; `committed_offsets` reads what a group has committed.

    python -m tests.integration.group_member BOOTSTRAP GROUP TOPIC [--session-ms N] [--record-delay-ms N]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offset of each partition of the topic (-1001: none), as confluent-kafka reads them."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found}


def say(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("bootstrap")
    parser.add_argument("group")
    parser.add_argument("topic")
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--record-delay-ms", type=int, default=0)
    args = parser.parse_args()
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": args.session_ms, "heartbeat.interval.ms": args.session_ms // 6})
    consumer.subscribe([args.topic],
                       on_assign=lambda _c, tps: say("assigned", partitions=sorted(tp.partition for tp in tps)),
                       on_revoke=lambda _c, tps: say("revoked", partitions=sorted(tp.partition for tp in tps)))
    while not stopping:
        message = consumer.poll(0.1)
        if message is None or message.error() is not None:
            continue
        say("record", partition=message.partition(), offset=message.offset())
        try:
            [committed] = consumer.commit(message=message, asynchronous=False)
        except KafkaException as e:
            say("commit_failed", partition=message.partition(), error=str(e))
        else:
            say("committed", partition=committed.partition, offset=committed.offset)
        time.sleep(args.record_delay_ms / 1000)
    consumer.close()
    say("closed")
    sys.exit(0)


class MemberProcess:
    """A group member running in its own process, and what it said so far."""

    def __init__(self, bootstrap: str, group: str, topic: str, *, session_ms: int = 6000,
                 record_delay_ms: int = 0) -> None:
        self.events: list[dict[str, Any]] = []
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.group_member", bootstrap, group, topic,
             "--session-ms", str(session_ms), "--record-delay-ms", str(record_delay_ms)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=PROJECT_ROOT,
            env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self.events.append(json.loads(line))

    @property
    def assignment(self) -> frozenset[int]:
        """The partitions it owns now (none before its first assignment and after a revocation)."""
        owned: frozenset[int] = frozenset()
        for event in list(self.events):
            if event["event"] == "assigned":
                owned = frozenset(event["partitions"])
            elif event["event"] == "revoked":
                owned = frozenset()
        return owned

    def committed(self) -> dict[int, int]:
        """The last commit acknowledged for each partition."""
        return {e["partition"]: e["offset"] for e in list(self.events) if e["event"] == "committed"}

    def records(self) -> list[tuple[int, int]]:
        """(partition, offset) of every record it read, in order."""
        return [(e["partition"], e["offset"]) for e in list(self.events) if e["event"] == "record"]

    def stop(self) -> None:
        """SIGTERM: it closes its consumer, leaving the group."""
        self._process.send_signal(signal.SIGTERM)
        self._process.wait(timeout=30)
        self._reader.join(timeout=5)

    def kill(self) -> None:
        """SIGKILL: it vanishes without leaving the group."""
        self._process.kill()
        self._process.wait(timeout=30)
        self._reader.join(timeout=5)


if __name__ == "__main__":
    main()
