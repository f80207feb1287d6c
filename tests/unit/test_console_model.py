"""The console's model: snapshots of the cluster from the brokers' answers, and the merge patches between two of them
(what the page is sent); and its timeline, the state-change logs read as they grow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from client.console.model import (
    OFFLINE,
    OK,
    UNDER_MIN_ISR,
    UNDER_REPLICATED,
    BrokerAnswer,
    apply,
    diff,
    partition_state,
    snapshot,
)
from client.console.timeline import StateChangeTail, entry_json
from protocol.apis.metadata import MetadataBroker, MetadataPartition, MetadataResponse, MetadataTopic
from protocol.apis.replicas import DescribedReplica, EpochStart, FollowerState


def metadata(leader: int = 1, isr: tuple[int, ...] = (1, 2, 3), live: tuple[int, ...] = (1, 2, 3),
             controller: int = 2, leader_epoch: int = 1) -> MetadataResponse:
    return MetadataResponse(
        brokers=[MetadataBroker(node_id=b, host="127.0.0.1", port=9090 + b) for b in live], controller_id=controller,
        topics=[MetadataTopic(error_code=0, name="events", partitions=[MetadataPartition(
            error_code=0, partition=0, leader=leader, leader_epoch=leader_epoch, replicas=[1, 2, 3], isr=list(isr),
            offline_replicas=[])])])


def replica(role: str, leo: int, hw: int, *, isr: tuple[int, ...] = (1, 2, 3), leader_epoch: int = 1,
            followers: tuple[FollowerState, ...] = (), epochs: tuple[tuple[int, int], ...] = ((0, 0), (1, 5))
            ) -> DescribedReplica:
    return DescribedReplica(topic="events", partition=0, role=role, leader=1, leader_epoch=leader_epoch,
                            log_end_offset=leo, high_watermark=hw, log_start_offset=0, isr=list(isr),
                            followers=list(followers), min_insync_replicas=2,
                            leader_epochs=[EpochStart(epoch=e, start_offset=s) for e, s in epochs])


def follower_state(broker_id: int, leo: int) -> FollowerState:
    return FollowerState(broker_id=broker_id, log_end_offset=leo, last_caught_up_time_ms=0, last_fetch_time_ms=0)


def answers(leader_isr: tuple[int, ...] = (1, 2, 3), third_answering: bool = True) -> dict[int, BrokerAnswer]:
    leader = replica("leader", 12, 10, isr=leader_isr, followers=(follower_state(2, 12), follower_state(3, 10)))
    return {
        1: BrokerAnswer(1, "127.0.0.1:9091", True, metadata(), [leader], controller_epoch=4),
        2: BrokerAnswer(2, "127.0.0.1:9092", True, metadata(), [replica("follower", 12, 10)], controller_epoch=4),
        3: BrokerAnswer(3, "127.0.0.1:9093", third_answering, metadata(), [replica("follower", 10, 10)],
                        controller_epoch=3, problem=None if third_answering else "no response within 1000 ms"),
    }


def test_a_snapshot_draws_every_replica_and_the_leaders_view_of_its_followers() -> None:
    shot = snapshot(answers(), metadata())
    assert (shot["controller"], shot["controller_epoch"]) == (2, 4)
    assert shot["brokers"]["2"] == {"id": 2, "address": "127.0.0.1:9092", "answering": True, "registered": True,
                                    "controller": True, "controller_epoch": 4}
    partition = shot["topics"]["events"]["partitions"]["0"]
    assert {key: partition[key] for key in ("leader", "leader_epoch", "replicas", "isr", "min_isr", "state")} == {
        "leader": 1, "leader_epoch": 1, "replicas": [1, 2, 3], "isr": [1, 2, 3], "min_isr": 2, "state": OK}
    assert partition["remote_leo"] == {"2": 12, "3": 10}
    assert partition["logs"]["1"] == {"broker": 1, "role": "leader", "leader_epoch": 1, "leo": 12, "hw": 10,
                                      "log_start": 0, "epochs": [[0, 0], [1, 5]], "current": True}
    assert [partition["logs"][b]["leo"] for b in ("2", "3")] == [12, 10]
    json.dumps(shot)


def test_the_answering_leaders_isr_wins_over_older_metadata() -> None:
    shot = snapshot(answers(leader_isr=(1, 2)), metadata(isr=(1, 2, 3)))
    partition = shot["topics"]["events"]["partitions"]["0"]
    assert (partition["isr"], partition["state"]) == ([1, 2], UNDER_REPLICATED)


def test_a_broker_that_stopped_answering_keeps_its_last_picture_marked_as_old() -> None:
    shot = snapshot(answers(third_answering=False), metadata())
    assert shot["brokers"]["3"]["answering"] is False
    assert shot["brokers"]["3"]["problem"] == "no response within 1000 ms"
    assert shot["topics"]["events"]["partitions"]["0"]["logs"]["3"]["current"] is False
    assert shot["controller_epoch"] == 4


def test_without_an_answering_leader_the_metadata_tells_the_leadership() -> None:
    silent = {b: BrokerAnswer(b, a.address, False, a.metadata, a.replicas, a.controller_epoch)
              for b, a in answers().items()}
    shot = snapshot(silent, metadata(isr=(1, 2)), problem="no broker answered")
    partition = shot["topics"]["events"]["partitions"]["0"]
    assert (partition["isr"], partition["remote_leo"]) == ([1, 2], {})
    assert (shot["problem"], shot["controller_epoch"]) == ("no broker answered", -1)
    assert snapshot({}, None) == {"controller": -1, "controller_epoch": -1, "brokers": {}, "topics": {}}


def test_a_broker_missing_from_the_metadata_is_not_registered() -> None:
    shot = snapshot(answers(third_answering=False), metadata(live=(1, 2), isr=(1, 2)))
    assert shot["brokers"]["3"]["registered"] is False
    assert shot["brokers"]["1"]["registered"] is True


def test_partition_states_are_the_worst_filter_of_kafka_topics_that_selects_them() -> None:
    assert partition_state(1, [1, 2, 3], [1, 2, 3], 2) == OK
    assert partition_state(1, [1, 2, 3], [1, 2], 2) == UNDER_REPLICATED
    assert partition_state(1, [1, 2, 3], [1], 2) == UNDER_MIN_ISR
    assert partition_state(-1, [1, 2, 3], [1], 2) == OFFLINE
    assert partition_state(1, [1, 2, 3], [1], -1) == UNDER_REPLICATED  # min ISR unknown


def test_a_patch_names_only_what_changed() -> None:
    before = snapshot(answers(), metadata())
    after = snapshot(answers(leader_isr=(1, 2), third_answering=False), metadata())
    patch = diff(before, after)
    assert set(patch) == {"brokers", "topics"}
    assert patch["brokers"] == {"3": {"answering": False, "problem": "no response within 1000 ms"}}
    partition = patch["topics"]["events"]["partitions"]["0"]
    assert partition == {"isr": [1, 2], "state": UNDER_REPLICATED, "logs": {"3": {"current": False}}}
    assert apply(before, patch) == after
    assert diff(after, after) == {}


def test_a_removed_key_is_a_null_in_the_patch() -> None:
    assert diff({"a": 1, "b": {"c": 2}}, {"b": {}}) == {"a": None, "b": {"c": None}}
    assert apply({"a": 1, "b": {"c": 2}}, {"a": None, "b": {"c": None}}) == {"b": {}}
    assert diff({"a": 1}, {"a": True}) == {"a": True}  # equal in Python, not in JSON


json_leaves = st.one_of(st.booleans(), st.integers(-5, 5), st.text(max_size=3), st.lists(st.integers(0, 3), max_size=3))
json_objects = st.recursive(json_leaves, lambda inner: st.dictionaries(st.sampled_from("abcde"), inner, max_size=4),
                            max_leaves=20).filter(lambda value: isinstance(value, dict))


@given(json_objects, json_objects)
def test_applying_the_patch_between_two_snapshots_gives_the_second(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert apply(old, diff(old, new)) == new
    assert json.loads(json.dumps(apply(old, diff(old, new)))) == new


def change(time_ms: int, broker: int, reason: str = "became leader") -> str:
    return json.dumps({"time_ms": time_ms, "source": "broker", "broker": broker, "topic": "events", "partition": 0,
                       "controller_epoch": 1, "leader_epoch": 0, "leader": 1, "isr": [1, 2], "reason": reason})


def test_the_timeline_reads_what_the_logs_gain_in_time_order(tmp_path: Path) -> None:
    one, two = tmp_path / "1.log", tmp_path / "2.log"
    tail = StateChangeTail({"broker 1": one, "broker 2": two})
    assert tail.read_new() == []  # not written yet
    one.write_text(change(30, 1) + "\n" + change(10, 1) + "\nnot json\n")
    two.write_text(change(20, 2) + "\n" + change(40, 2)[:12])  # the last line is still being written
    assert [(e.time_ms, e.log) for e in tail.read_new()] == [(10, "broker 1"), (20, "broker 2"), (30, "broker 1")]
    assert tail.read_new() == []
    with two.open("a") as file:
        file.write(change(40, 2)[12:] + "\n")
    [entry] = tail.read_new()
    assert entry_json(entry) == {"time_ms": 40, "log": "broker 2", "who": "broker 2", "where": "events-0",
                                 "what": "leader 1 leader_epoch 0 isr [1, 2] controller_epoch 1",
                                 "why": "became leader"}


def test_the_timeline_reads_a_replaced_log_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "state-change.log"
    log.write_text(change(10, 1) + "\n" + change(20, 1) + "\n")
    tail = StateChangeTail({"broker 1": log})
    assert len(tail.read_new()) == 2
    log.write_text(change(30, 1) + "\n")
    assert [e.time_ms for e in tail.read_new()] == [30]
