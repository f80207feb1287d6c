"""The Spark session the verifier runs in, quiet: Spark's output goes to a log file, never to the terminal.

Under ``spark-submit`` the session (and its master) is spark-submit's. Otherwise one is started here:

- the workers run this interpreter (PYSPARK_PYTHON), and everything binds 127.0.0.1 unless SPARK_LOCAL_IP says
  otherwise;
- the UI, the console progress bar and the recording of each DataFrame call's Python call site are off;
- the Python workers talk to the JVM over Unix domain sockets, in a directory of this process's own, removed when it
  exits;
- the cache of generated code holds every class a verification compiles;
- the driver JVM runs the parallel (throughput) collector and only the JIT's quick compiler (at a tenth of its
  thresholds), and maps Spark's classes from a class data sharing archive where there is one (``class_archive``;
  ``make setup`` makes it with verifier.class_archive);
- log4j reads verifier/conf/log4j2.properties, and the driver JVM's standard error (its log, its own warnings, the
  Python workers' output) goes to a log file (``spark_log_path``), and so do the tracebacks py4j and PySpark's
  accumulator server (a thread of this process) print when their connections to the JVM break (verifier.spark_failure
  says in one line how Spark failed).
"""

from __future__ import annotations

import atexit
import logging
import os
import shlex
import shutil
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

CONF_DIR = Path(__file__).resolve().parent / "conf"
DEFAULT_MASTER = "local[*]"
DRIVER_MEMORY = "512m"
#: A verification generates and compiles some 80 classes. With Spark's default cache of 100 (LRU by segment), each
#: verification compiled about 24 of them again, and the JIT compiled those again in turn.
CODEGEN_CACHE_ENTRIES = 1000
#: The throughput collector: the driver's heap is small and its garbage short-lived; G1's concurrent marking cost
#: more CPU time than it saved. And only the JIT's quick compiler (C1): a verifier's session runs a few
#: verifications, all in the JIT's warm-up, where C2 spent about half the driver's CPU time compiling Spark's own code.
#: C1 compiles a method after a tenth of the calls it would wait for otherwise: Spark's planner runs thousands of
#: methods a few times per verification, and at the usual thresholds they were still being compiled (and run
#: interpreted until then) after 15 verifications. The code they compile to takes about 66 MB, more than the 48 MB
#: the JVM keeps for it with C1 alone, so it keeps 240 MB, as it does with C2.
DRIVER_JAVA_OPTIONS = ("-XX:+UseParallelGC -XX:TieredStopAtLevel=1 -XX:CompileThresholdScaling=0.1 "
                       "-XX:ReservedCodeCacheSize=240m")
#: The JVM's own warnings (such as an archive it cannot use) go to its standard error, that is the log file, instead
#: of its standard output, which is the verifier's.
JVM_LOG_OPTIONS = "-Xlog:disable -Xlog:all=warning:stderr"
#: Given to log4j as a system property, not as SPARK_CONF_DIR: a directory on the JVM's class path that holds files
#: keeps the JVM from using a class archive.
LOG4J_CONFIG = CONF_DIR / "log4j2.properties"
#: The longest path a Unix socket can have (sun_path, less its terminating zero), and the length of the names Spark
#: gives its sockets (".<UUID>.sock").
SOCKET_PATH_BYTES = 107
SOCKET_NAME_BYTES = len(f".{uuid.UUID(int=0)}.sock")


def spark_log_path() -> Path:
    """Where the driver JVM started by this process writes its output."""
    return Path(tempfile.gettempdir()) / f"minikafka-verify-spark-{os.getpid()}.log"


def under_spark_submit() -> bool:
    """True when spark-submit started this process (its JVM is already running)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def class_archive() -> Path:
    """The class data sharing archive of the driver JVM (in this interpreter's environment): Spark's classes as the
    JVM holds them once loaded and checked, mapped from one file at start-up instead of read from the jars class by
    class (a session started in about 2 s with it, 5 s without)."""
    return Path(sys.prefix) / "share" / "minikafka" / "spark-classes.jsa"


def driver_java_options(archive_classes_to: Path | None = None) -> str:
    """The driver JVM's options: DRIVER_JAVA_OPTIONS, JVM_LOG_OPTIONS, log4j's configuration, and the class archive
    (mapped if it exists; with ``archive_classes_to``, written there instead when the JVM exits)."""
    options = [DRIVER_JAVA_OPTIONS, JVM_LOG_OPTIONS, _path_option("-Dlog4j2.configurationFile", LOG4J_CONFIG)]
    archive = class_archive()
    if archive_classes_to is not None:
        options.append(_path_option("-XX:ArchiveClassesAtExit", archive_classes_to))
    elif archive.is_file():
        options.append(_path_option("-XX:SharedArchiveFile", archive))
    return " ".join(options)


def _path_option(option: str, path: Path) -> str:
    """``option=path``, quoted as Spark splits its extraJavaOptions (like a shell)."""
    return f"{option}={shlex.quote(str(path))}"


def get_session(master: str | None = None, *, archive_classes_to: Path | None = None) -> tuple[SparkSession, float]:
    """(the session, seconds it took to start: 0 if one was running). ``master`` is ignored under spark-submit.
    ``archive_classes_to``: where the driver JVM writes its class archive when it exits (verifier.class_archive)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, 0.0
    started = time.monotonic()
    if under_spark_submit():
        return SparkSession.builder.getOrCreate(), time.monotonic() - started
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--driver-memory {DRIVER_MEMORY} pyspark-shell")
    builder = (SparkSession.builder.master(master or DEFAULT_MASTER).appName("minikafka-verify")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               # Not recording each DataFrame call's Python call site saves a round trip to the JVM per call.
               .config("spark.python.sql.dataFrameDebugging.enabled", "false")
               .config("spark.sql.codegen.cache.maxEntries", str(CODEGEN_CACHE_ENTRIES))
               .config("spark.driver.extraJavaOptions", driver_java_options(archive_classes_to))
               .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"]))
    sockets = socket_directory()
    if sockets is not None:
        # Over TCP, each Python task waited about 40 ms for its input to arrive; over a Unix socket, a few ms.
        builder = (builder.config("spark.python.unix.domain.socket.enabled", "true")
                   .config("spark.python.unix.domain.socket.dir", str(sockets)))
    with _stderr_to(spark_log_path()):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _broken_connections_to_log(spark.sparkContext)
    return spark, time.monotonic() - started


def _broken_connections_to_log(context: SparkContext) -> None:
    """When the driver JVM dies, two parts of PySpark in this process print a traceback to standard error: its
    accumulator server (a thread the JVM sends the Python tasks' updates to), and py4j, which logs each call that
    finds no JVM on the root logger (to standard error, by Python's default handler, where the root logger has none).
    Both go to the Spark log instead (the root logger's records only where it has no handler of its own): the
    verification's own error says what happened."""
    def to_log(_request: object, _client_address: object) -> None:
        with spark_log_path().open("a") as log:
            traceback.print_exc(file=log)

    context._accumulatorServer.handle_error = to_log  # type: ignore[union-attr]
    if not logging.root.handlers:
        logging.root.addHandler(logging.FileHandler(spark_log_path(), delay=True))


def socket_directory() -> Path | None:
    """A directory of this process for the Python workers' Unix sockets, removed when it exits: Spark removes them
    when its session stops, and a process that ends without stopping it would leave them behind. None where the
    directory's path leaves no room for a socket's name."""
    directory = Path(tempfile.mkdtemp(prefix="minikafka-spark-"))
    if len(os.fsencode(directory)) + len(b"/") + SOCKET_NAME_BYTES > SOCKET_PATH_BYTES:
        directory.rmdir()
        return None
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """File descriptor 2 points at ``path`` inside the block, so that the JVM started there (and every process it
    starts) inherits it; the Python process gets its own standard error back afterwards."""
    sys.stderr.flush()
    saved = os.dup(2)
    log_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(log_fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log_fd)
