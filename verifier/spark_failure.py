"""Saying in one line how Spark failed a verification: the error, how the driver JVM ended, or what its log says.

A driver JVM that died makes the verifier's clean-up fail too: the first Spark error of the chain says why. A JVM
that is gone (killed, or out of memory) is said to have ended, with its exit status, rather than with py4j's message
about the call that found no JVM; a JVM that exited before it started Spark (such as for a master URL it cannot
parse) says why in the Spark log (verifier.session.spark_log_path).
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark import SparkContext
from pyspark.errors import PySparkException

from verifier.session import spark_log_path

#: What Spark raises when it fails: an error of the JVM's, of PySpark's, or the JVM gone.
SPARK_ERRORS = (Py4JError, PySparkException, ConnectionError)
#: How long a driver JVM whose connection broke is given to end, before it is said to still run.
JVM_EXIT_WAIT_S = 5.0


def spark_failure(error: BaseException) -> str:
    """One line saying how Spark failed (``error`` one of SPARK_ERRORS), and where its log is."""
    while isinstance(error.__context__, SPARK_ERRORS):
        error = error.__context__
    # An error of py4j's own (not a Java exception), or of the connection: the JVM may be gone.
    lost_the_jvm = isinstance(error, (Py4JError, ConnectionError)) and not isinstance(error, Py4JJavaError)
    ended = _how_the_driver_jvm_ended() if lost_the_jvm else None
    reason = f"its driver JVM ended ({ended})" if ended is not None else _first_line(error)
    log = spark_log_path()
    if not log.is_file():
        return f"the verification failed in Spark: {reason}"
    return f"the verification failed in Spark: {_why_the_jvm_exited(log) or reason} (Spark's log: {log})"


def _first_line(error: BaseException) -> str:
    """The first line of the error's message; of a Java exception's, the line after py4j's "An error occurred while
    calling ..."."""
    try:
        text = str(error)
    except Exception:  # a Java exception's message is asked of the JVM, which may be gone
        text = getattr(error, "errmsg", "")
    lines = [line.strip(" :") for line in text.splitlines() if line.strip(" :")] or [type(error).__name__]
    return lines[1] if len(lines) > 1 and lines[0].startswith("An error occurred while calling") else lines[0]


def _how_the_driver_jvm_ended() -> str | None:
    """How the driver JVM that this process's Spark session runs on ended ("killed by SIGKILL", "exit status 52"),
    waiting up to JVM_EXIT_WAIT_S for it (its connection closes while it exits): None if it still runs, or if no
    session was started."""
    process = getattr(SparkContext._gateway, "proc", None)
    if process is None:
        return None
    try:
        status = process.wait(timeout=JVM_EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        return None
    return f"killed by {signal.Signals(-status).name}" if status < 0 else f"exit status {status}"


def _why_the_jvm_exited(log: Path) -> str | None:
    """The message of the exception that ended a driver JVM before it started Spark (such as a master URL it cannot
    parse), as its log has it; None if there is none."""
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith('Exception in thread "main" ') and "Exception: " in line:
            return line.split("Exception: ", 1)[1]
    return None
