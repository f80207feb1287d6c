"""The Python runtime settings a broker runs with, and what it logs of errors that reach its event loop."""

import asyncio
import errno
import logging
import sys

import pytest

from broker.server import _log_loop_exception, tune_interpreter


def test_a_broker_lets_its_worker_threads_take_the_gil_within_half_a_millisecond():
    default = sys.getswitchinterval()
    try:
        tune_interpreter()
        assert sys.getswitchinterval() <= 0.0005
    finally:
        sys.setswitchinterval(default)


def test_running_out_of_descriptors_is_logged_with_the_count_and_the_limit(caplog: pytest.LogCaptureFixture):
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level(logging.ERROR):
            _log_loop_exception(loop, {"message": "accept failed",
                                       "exception": OSError(errno.EMFILE, "Too many open files")})
            _log_loop_exception(loop, {"message": "something else", "exception": ValueError("boom")})
    finally:
        loop.close()
    messages = [record.getMessage() for record in caplog.records]
    out = [m for m in messages if m.startswith("out of file descriptors")]
    assert len(out) == 1 and "open, limit " in out[0] and "accept failed" in out[0]
    assert any("something else" in m for m in messages)  # every other error is still logged, with its cause
