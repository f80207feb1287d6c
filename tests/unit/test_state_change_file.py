"""A broker's state changes go to state-change.log, one JSON line each, and not to its server log."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.state_change import STATE_CHANGE_LOG, install_state_change_file, logger, record_state_change


@pytest.fixture
def state_change_file(tmp_path: Path) -> Iterator[Path]:
    """install_state_change_file on a fresh directory; the logger is put back as it was afterwards."""
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    handler = install_state_change_file(tmp_path)
    try:
        yield tmp_path / STATE_CHANGE_LOG
    finally:
        handler.close()
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_a_state_change_is_a_json_line_of_state_change_log_and_stays_out_of_the_server_log(state_change_file: Path):
    server_log, root = _Lines(), logging.getLogger()
    root.addHandler(server_log)  # the server log: a handler of the root logger
    try:
        record_state_change(source="controller", broker_id=2, topic="events", partition=7, controller_epoch=3,
                            leader_epoch=5, leader=2, isr=(2, 3), reason="broker failure of [1]")
        logging.getLogger("broker.server").warning("a server log line")
    finally:
        root.removeHandler(server_log)

    [line] = state_change_file.read_text().splitlines()
    change = json.loads(line)
    assert {k: change[k] for k in ("source", "broker", "topic", "partition", "leader_epoch", "leader", "isr")} == {
        "source": "controller", "broker": 2, "topic": "events", "partition": 7, "leader_epoch": 5, "leader": 2,
        "isr": [2, 3]}
    assert server_log.lines == ["a server log line"]
