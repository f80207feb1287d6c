"""The log manager: claiming log dirs, loading partitions, checkpoints and clean shutdown."""

from __future__ import annotations

import pytest

from broker.log.checkpoint import (
    CLEAN_SHUTDOWN_MARKER,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    read_meta_properties,
)
from broker.log.config import LogConfig
from broker.log.log import flush_topic_ids
from broker.log.manager import InconsistentClusterIdError, LogDirError, LogManager, remove_deleted_dir
from protocol.topic_partition import TopicPartition
from tests.unit.logutil import ManualClock, batch, values_of


def manager(*dirs, broker_id: int = 1, cluster_id: str | None = None, **config: int) -> LogManager:
    started = LogManager(list(dirs), broker_id, LogConfig(**config), clock=ManualClock())
    started.startup(cluster_id)
    return started


def test_startup_claims_the_log_dir_and_refuses_another_brokers(tmp_path):
    manager(tmp_path / "a", broker_id=1).shutdown()
    assert read_meta_properties(tmp_path / "a") == {"version": "0", "broker.id": "1"}
    with pytest.raises(LogDirError, match=r"belongs to broker.id 1, this broker is 2"):
        manager(tmp_path / "a", broker_id=2)


def test_startup_records_the_cluster_id_and_refuses_another_clusters_log_dir(tmp_path):
    manager(tmp_path / "a").shutdown()  # a log dir of a broker that did not know its cluster yet
    manager(tmp_path / "a", cluster_id="Wz3hJwq9T0y1e6bRfZbBLQ").shutdown()
    assert read_meta_properties(tmp_path / "a") == {"version": "0", "broker.id": "1",
                                                    "cluster.id": "Wz3hJwq9T0y1e6bRfZbBLQ"}
    manager(tmp_path / "a", cluster_id="Wz3hJwq9T0y1e6bRfZbBLQ").shutdown()
    with pytest.raises(InconsistentClusterIdError, match=r"The Cluster ID kGwRvbWGSsO6m3ZxaPbnCw doesn't match "
                                                         r"stored clusterId Wz3hJwq9T0y1e6bRfZbBLQ"):
        manager(tmp_path / "a", cluster_id="kGwRvbWGSsO6m3ZxaPbnCw")


def test_shutdown_writes_kafka_checkpoints_and_the_marker(tmp_path):
    logs = manager(tmp_path, segment_bytes=1000)
    events, audit = TopicPartition("events", 0), TopicPartition("audit.log-x", 3)
    for _ in range(20):
        logs.get_or_create_log(events).append_as_leader(batch(b"v" * 100), leader_epoch=0)
    logs.get_or_create_log(audit).append_as_leader(batch(b"a", b"b"), leader_epoch=2)
    logs.get_log(events).update_high_watermark(15)
    logs.get_log(events).delete_records(12)
    logs.get_log(audit).update_high_watermark(2)
    logs.shutdown()
    assert (tmp_path / CLEAN_SHUTDOWN_MARKER).exists()
    assert (tmp_path / REPLICATION_OFFSET_CHECKPOINT).read_text() == "0\n2\naudit.log-x 3 2\nevents 0 15\n"
    assert (tmp_path / RECOVERY_POINT_CHECKPOINT).read_text() == "0\n2\naudit.log-x 3 2\nevents 0 20\n"
    assert (tmp_path / LOG_START_OFFSET_CHECKPOINT).read_text() == "0\n1\nevents 0 12\n"
    assert (tmp_path / "audit.log-x-3" / "leader-epoch-checkpoint").read_text() == "0\n1\n2 0\n"


def test_restart_after_clean_shutdown_restores_offsets(tmp_path):
    logs = manager(tmp_path, segment_bytes=1000)
    tp = TopicPartition("events", 0)
    for i in range(20):
        logs.get_or_create_log(tp).append_as_leader(batch(b"%d" % i), leader_epoch=0)
    logs.get_log(tp).update_high_watermark(18)
    logs.get_log(tp).delete_records(5)
    logs.shutdown()
    again = manager(tmp_path, segment_bytes=1000)
    restored = again.get_log(tp)
    assert again.clean_shutdown[tmp_path] is True
    assert not (tmp_path / CLEAN_SHUTDOWN_MARKER).exists()
    assert (restored.log_start_offset, restored.high_watermark, restored.log_end_offset) == (5, 18, 20)
    assert restored.recovery_point == 20
    assert values_of(restored.read(5, 1 << 20))[0] == b"5"


def test_restart_after_a_crash_recovers_torn_tails(tmp_path):
    logs = manager(tmp_path)
    tp = TopicPartition("events", 0)
    for i in range(5):
        logs.get_or_create_log(tp).append_as_leader(batch(b"%d" % i), leader_epoch=0)
    segment_file = logs.get_log(tp).active_segment.log_path
    logs.get_log(tp).flush()
    segment_file.write_bytes(segment_file.read_bytes()[:-10])  # the crash tore the last batch
    again = manager(tmp_path)  # no shutdown(): no marker
    assert again.clean_shutdown[tmp_path] is False
    assert again.get_log(tp).log_end_offset == 4
    assert values_of(again.get_log(tp).read(0, 1 << 20)) == [b"0", b"1", b"2", b"3"]


def test_new_logs_spread_over_log_dirs(tmp_path):
    logs = manager(tmp_path / "d1", tmp_path / "d2")
    for p in range(4):
        logs.get_or_create_log(TopicPartition("t", p))
    parents = sorted(each.dir.parent.name for each in logs.logs.values())
    assert parents == ["d1", "d1", "d2", "d2"]
    logs.shutdown()
    again = manager(tmp_path / "d1", tmp_path / "d2")
    assert sorted(again.logs) == [TopicPartition("t", p) for p in range(4)]


def test_a_stray_directory_is_refused_with_its_name(tmp_path):
    (tmp_path / "not_a_partition").mkdir()
    with pytest.raises(LogDirError, match="not_a_partition"):
        manager(tmp_path)


def test_flush_and_retention_run_over_every_log(tmp_path):
    logs = manager(tmp_path, segment_bytes=500, retention_bytes=600, flush_messages=2)
    tp = TopicPartition("events", 0)
    log = logs.get_or_create_log(tp)
    for _ in range(10):
        log.append_as_leader(batch(b"v" * 100), leader_epoch=0)
    assert logs.flush_due_logs() == 1 and log.recovery_point == 10
    assert logs.flush_due_logs() == 0
    log.update_high_watermark(10)
    assert logs.cleanup_logs() > 0
    assert log.log_start_offset > 0
    renamed = logs.delete_log(tp)
    assert not log.dir.exists() and logs.get_log(tp) is None
    assert renamed is not None and renamed.name.startswith("events-0.") and renamed.name.endswith("-delete")
    remove_deleted_dir(renamed)
    assert not renamed.exists() and logs.delete_log(tp) is None


def test_a_log_deleted_before_a_crash_is_removed_at_start_up_and_a_topic_id_is_kept(tmp_path):
    logs = manager(tmp_path)
    kept, deleted = TopicPartition("events", 0), TopicPartition("events", 1)
    logs.get_or_create_log(kept).assign_topic_id("ZOLr9CLNQjSW70hyIHx6BQ")
    logs.get_or_create_log(deleted).append_as_leader(batch(b"a"), leader_epoch=0)
    renamed = logs.delete_log(deleted)  # and the broker dies before removing the directory
    assert renamed is not None and renamed.exists()
    restarted = manager(tmp_path)
    assert not renamed.exists()
    assert sorted(restarted.logs) == [kept]
    assert restarted.get_log(kept).topic_id == "ZOLr9CLNQjSW70hyIHx6BQ"
    metadata = (tmp_path / "events-0" / "partition.metadata").read_text()
    assert metadata == "version: 0\ntopic_id: ZOLr9CLNQjSW70hyIHx6BQ\n"  # Kafka's format


def test_a_recorded_topic_id_is_written_by_its_flush_and_never_into_the_directory_of_a_closed_log(tmp_path):
    logs = manager(tmp_path)
    first, second = TopicPartition("events", 0), TopicPartition("events", 1)
    created = [logs.get_or_create_log(tp) for tp in (first, second)]
    for each in created:
        each.record_topic_id("ZOLr9CLNQjSW70hyIHx6BQ")
    assert created[0].topic_id == "ZOLr9CLNQjSW70hyIHx6BQ"
    assert not (tmp_path / "events-0" / "partition.metadata").exists()  # nothing durable yet
    logs.delete_log(second)  # closed before its flush: a new incarnation may own that directory name next
    created[1].dir.mkdir()  # as that new incarnation would
    flush_topic_ids(created)
    written = (tmp_path / "events-0" / "partition.metadata").read_text()
    assert written == "version: 0\ntopic_id: ZOLr9CLNQjSW70hyIHx6BQ\n"
    assert manager(tmp_path).get_log(first).topic_id == "ZOLr9CLNQjSW70hyIHx6BQ"
    assert not (tmp_path / "events-1" / "partition.metadata").exists()


def test_a_checkpoint_snapshot_is_written_only_when_its_offsets_changed(tmp_path):
    logs = manager(tmp_path)
    tp = TopicPartition("events", 0)
    logs.get_or_create_log(tp).append_as_leader(batch(b"a", b"b"), leader_epoch=0)
    logs.get_log(tp).update_high_watermark(1)
    snapshot = logs.checkpoint_snapshot(REPLICATION_OFFSET_CHECKPOINT)
    assert snapshot == {tmp_path: {tp: 1}}
    logs.write_checkpoint(REPLICATION_OFFSET_CHECKPOINT, snapshot)
    assert (tmp_path / REPLICATION_OFFSET_CHECKPOINT).read_text() == "0\n1\nevents 0 1\n"
    assert logs.checkpoint_snapshot(REPLICATION_OFFSET_CHECKPOINT) is None
    logs.get_log(tp).update_high_watermark(2)
    assert logs.checkpoint_snapshot(REPLICATION_OFFSET_CHECKPOINT) == {tmp_path: {tp: 2}}


def test_checkpoints_are_written_on_a_thread_while_logs_are_added(tmp_path):
    """The writer thread only sees a snapshot: adding thousands of logs meanwhile cannot break it."""
    import threading

    logs = manager(tmp_path)
    failures: list[BaseException] = []
    done = threading.Event()

    def write_repeatedly(snapshot) -> None:
        try:
            while not done.is_set():
                logs.write_checkpoint(REPLICATION_OFFSET_CHECKPOINT, snapshot)
        except BaseException as e:
            failures.append(e)

    logs.get_or_create_log(TopicPartition("t", 0))
    writer = threading.Thread(target=write_repeatedly, args=(logs.checkpoint_snapshot(REPLICATION_OFFSET_CHECKPOINT),))
    writer.start()
    try:
        placed = logs.place_new_logs([TopicPartition("t", p) for p in range(1, 1500)])
        logs.add_logs([logs.open_log(directory, tp, LogConfig()) for tp, directory in placed.items()])
    finally:
        done.set()
        writer.join()
    assert failures == []
    assert len(logs.logs) == 1500


def test_new_logs_go_to_the_log_dir_holding_the_fewest(tmp_path):
    logs = manager(tmp_path / "a", tmp_path / "b")
    for p in range(3):
        logs.get_or_create_log(TopicPartition("t", p))
    placed = logs.place_new_logs([TopicPartition("u", p) for p in range(5)])
    per_dir = {"a": 0, "b": 0}
    for directory in [each.dir for each in logs.logs.values()] + list(placed.values()):
        per_dir[directory.parent.name] += 1
    assert per_dir == {"a": 4, "b": 4}
