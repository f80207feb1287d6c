"""The state-change log: one JSON line per partition state change a broker or controller makes or receives.

Lines go to the ``state.change`` logger. A broker process writes them to ``state-change.log`` in its first log
directory, where each line can be parsed with ``json.loads``, and only there: as with Kafka's state-change logger,
they stay out of the server log, which a leadership move of thousands of partitions would otherwise flood (and
each line would cost a second write).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from pathlib import Path

STATE_CHANGE_LOG = "state-change.log"
logger = logging.getLogger("state.change")


def record_state_change(*, source: str, broker_id: int, topic: str, partition: int, controller_epoch: int,
                        leader_epoch: int, leader: int, isr: Iterable[int], reason: str, **details: object) -> None:
    """Log one change: who (``source`` "controller" or "broker", and ``broker_id``), which partition,
    the state (controller epoch, leader epoch, leader, ISR) and why."""
    _record(source=source, broker=broker_id, topic=topic, partition=partition, controller_epoch=controller_epoch,
            leader_epoch=leader_epoch, leader=leader, isr=list(isr), reason=reason, **details)


def record_replica_state_change(*, source: str, broker_id: int, topic: str, partition: int, replica: int,
                                state: str, reason: str, **details: object) -> None:
    """Log one change of a replica (a partition on broker ``replica``): started, stopped, deleted, ..."""
    _record(source=source, broker=broker_id, topic=topic, partition=partition, replica=replica, replica_state=state,
            reason=reason, **details)


def _record(**fields: object) -> None:
    logger.info(json.dumps({"time_ms": time.time_ns() // 1_000_000, **fields}))


def install_state_change_file(log_dir: Path) -> logging.Handler:
    """Send state-change lines to ``<log_dir>/state-change.log`` (message only, one per line), and no longer to
    the handlers of the root logger."""
    log_dir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log_dir / STATE_CHANGE_LOG, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return handler
