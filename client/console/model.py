"""The console's picture of the cluster, pure: what the brokers last answered becomes one JSON-ready snapshot, and
two snapshots become the patch that turns the first into the second (a JSON merge patch, RFC 7386), which is all
the page is sent after its first snapshot.

A snapshot is made of maps keyed by strings (brokers by id, topics by name, partitions by number), so that a patch
names exactly what changed; lists (an ISR, the epoch starts) are replaced whole. It holds no nulls (a null in a
patch removes a key): what is unknown is left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from protocol.apis.metadata import MetadataResponse
from protocol.apis.replicas import DescribedReplica

#: A snapshot, a patch: JSON objects.
Json = dict[str, Any]

OK, UNDER_REPLICATED, UNDER_MIN_ISR, OFFLINE = "ok", "under-replicated", "under-min-isr", "offline"
_ABSENT = object()


@dataclass(frozen=True, slots=True)
class BrokerAnswer:
    """What one broker last told the console: whether its latest poll was answered, what it said then (or the last
    time it answered), and why the latest poll failed."""

    broker_id: int
    address: str
    answering: bool
    metadata: MetadataResponse | None = None
    replicas: Sequence[DescribedReplica] = ()
    controller_epoch: int = -1
    problem: str | None = None


def snapshot(answers: Mapping[int, BrokerAnswer], metadata: MetadataResponse | None, *,
             problem: str | None = None) -> Json:
    """The cluster as the page shows it: the brokers (answering, registered in the cluster metadata, the
    controller, the controller epoch each has seen), and every partition with each replica's log as its broker
    last described it, and the leader's view of its followers. `metadata` is the answer to trust for leadership
    (the controller's, when it answers); `problem` says why nothing could be read."""
    live = {b.node_id for b in metadata.brokers} if metadata is not None else set()
    controller = metadata.controller_id if metadata is not None else -1
    epochs = [a.controller_epoch for a in answers.values() if a.answering]
    brokers = {
        str(a.broker_id): _without_nulls({
            "id": a.broker_id, "address": a.address, "answering": a.answering, "registered": a.broker_id in live,
            "controller": a.broker_id == controller, "controller_epoch": a.controller_epoch, "problem": a.problem,
        })
        for a in sorted(answers.values(), key=lambda a: a.broker_id)
    }
    return _without_nulls({
        "controller": controller,
        "controller_epoch": max(epochs, default=-1),
        "brokers": brokers,
        "topics": _topics(answers, metadata),
        "problem": problem,
    })


def _without_nulls(fields: Json) -> Json:
    return {key: value for key, value in fields.items() if value is not None}


def _topics(answers: Mapping[int, BrokerAnswer], metadata: MetadataResponse | None) -> Json:
    hosted: dict[tuple[str, int], dict[int, tuple[DescribedReplica, bool]]] = {}
    for answer in answers.values():
        for replica in answer.replicas:
            hosted.setdefault((replica.topic, replica.partition), {})[answer.broker_id] = (replica, answer.answering)
    topics: Json = {}
    for topic in metadata.topics if metadata is not None else ():
        if topic.error_code != 0:
            continue
        partitions = {}
        for p in sorted(topic.partitions, key=lambda p: p.partition):
            partitions[str(p.partition)] = _partition(topic.name, p.partition, p.leader, p.leader_epoch,
                                                      list(p.replicas), list(p.isr), list(p.offline_replicas),
                                                      hosted.get((topic.name, p.partition), {}))
        topics[topic.name] = {"name": topic.name, "partitions": partitions}
    return dict(sorted(topics.items()))


def _partition(topic: str, number: int, leader: int, leader_epoch: int, replicas: list[int], isr: list[int],
               offline: list[int], hosted: Mapping[int, tuple[DescribedReplica, bool]]) -> Json:
    """One partition: leadership from the metadata, replaced by the leader's own account when the leader answers
    (the ISR it adopted, its epoch: it knows first); each replica's log; the leader's view of its followers."""
    leader_state, leader_answering = hosted.get(leader, (None, False))
    leads = leader_state is not None and leader_answering and leader_state.role == "leader"
    if leads:
        assert leader_state is not None
        isr, leader_epoch = sorted(leader_state.isr), leader_state.leader_epoch
    min_isr = leader_state.min_insync_replicas if leader_state is not None else -1
    return {
        "topic": topic,
        "partition": number,
        "leader": leader,
        "leader_epoch": leader_epoch,
        "replicas": replicas,
        "isr": isr,
        "offline": offline,
        "min_isr": min_isr,
        "state": partition_state(leader, replicas, isr, min_isr),
        "remote_leo": ({str(f.broker_id): f.log_end_offset for f in leader_state.followers}
                       if leads and leader_state is not None else {}),
        "logs": {str(b): _replica(b, *hosted[b]) for b in replicas if b in hosted},
    }


def _replica(broker_id: int, replica: DescribedReplica, answering: bool) -> Json:
    return {
        "broker": broker_id,
        "role": replica.role,
        "leader_epoch": replica.leader_epoch,
        "leo": replica.log_end_offset,
        "hw": replica.high_watermark,
        "log_start": replica.log_start_offset,
        "epochs": [[e.epoch, e.start_offset] for e in replica.leader_epochs],
        "current": answering,
    }


def partition_state(leader: int, replicas: Sequence[int], isr: Sequence[int], min_isr: int) -> str:
    """The worst of kafka-topics' describe filters that selects the partition: offline (no leader), under min ISR,
    under-replicated; else ok."""
    if leader < 0:
        return OFFLINE
    if len(isr) < min_isr:
        return UNDER_MIN_ISR
    if len(isr) < len(replicas):
        return UNDER_REPLICATED
    return OK


def diff(old: Json, new: Json) -> Json:
    """The JSON merge patch from `old` to `new`: the keys whose values changed (objects patched recursively), and
    None for the keys `new` lacks. Empty when nothing changed."""
    patch: Json = {key: None for key in old if key not in new}
    for key, value in new.items():
        before = old.get(key, _ABSENT)
        if isinstance(value, dict) and isinstance(before, dict):
            inner = diff(before, value)
            if inner:
                patch[key] = inner
        elif before != value or type(before) is not type(value):
            patch[key] = value
    return patch


def apply(document: Json, patch: Json) -> Json:
    """`document` with the merge patch applied (a new object; `document` is left as it was)."""
    patched = dict(document)
    for key, value in patch.items():
        if value is None:
            patched.pop(key, None)
        elif isinstance(value, dict) and isinstance(patched.get(key), dict):
            patched[key] = apply(patched[key], value)
        else:
            patched[key] = value
    return patched

