"""The Python runtime settings a broker runs with."""

import sys

from broker.server import tune_interpreter


def test_a_broker_lets_its_worker_threads_take_the_gil_within_half_a_millisecond():
    default = sys.getswitchinterval()
    try:
        tune_interpreter()
        assert sys.getswitchinterval() <= 0.0005
    finally:
        sys.setswitchinterval(default)
