"""The soak's Spark pipeline workload: the example Structured Streaming query (examples/spark_pipeline.py: counts per
key and window, written to Parquet and to a compacted topic) reads the soak's topic while the nemesis runs, as a
driver process of its own in Spark's local mode. A driver that dies (a query that failed) is started again from
its checkpoint, as Spark's documentation says to. At the end a record far in the future moves the watermark past
every window, and the query runs to completion (Trigger.AvailableNow over the same checkpoint); what the Parquet
files the file sink committed count per key is then compared with the producers' history
(client/chaos/pipeline_check.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from client.chaos.pipeline_check import check_counts
from client.producer import Producer
from protocol.history import read_history

PROJECT_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = PROJECT_ROOT / "examples" / "spark_pipeline.py"
CONNECTOR_JARS = PROJECT_ROOT / "build" / "spark-kafka" / "jars"
#: Tumbling windows of event time.
WINDOW = "10 seconds"
#: How late a record may come and still be counted. A record is acknowledged at most the producers' delivery
#: timeout (10 s) after it was stamped, and Spark reads it in the first micro-batch planned after that; the
#: watermark stays well behind.
WATERMARK = "30 seconds"
INTERVAL = "2 seconds"
#: The key of the record that closes every window at the end.
END_KEY = "pipeline-end"
_END_AHEAD_MS = 24 * 3600 * 1000
_FINISH_TIMEOUT_S = 900.0
_RESTART_PAUSE_S = 1.0
_POLL_S = 0.5
_TAIL = 3000


class PipelineError(RuntimeError):
    """The pipeline could not be run to completion."""


class SparkPipeline:
    """The example pipeline reading `topic` (the soak's) and `end_topic` (the record that closes the windows),
    writing Parquet and checkpoints under `directory` and counts to `output_topic`; its drivers' output goes to
    `directory`/driver.log."""

    def __init__(self, bootstrap: str, topic: str, end_topic: str, output_topic: str, directory: Path,
                 progress: Callable[[str], None]) -> None:
        if not EXAMPLE.exists():
            raise PipelineError(f"the pipeline {EXAMPLE} is not there (it is in minikafka's source tree)")
        if not any(CONNECTOR_JARS.glob("spark-sql-kafka-*.jar")):
            raise PipelineError(f"Spark's Kafka connector is not in {CONNECTOR_JARS}: `make setup` fetches it")
        self.bootstrap = bootstrap
        self.end_topic = end_topic
        self.directory = directory
        self.progress = progress
        self.command = [sys.executable, str(EXAMPLE), "--bootstrap-server", bootstrap,
                        "--input-topic", f"{topic},{end_topic}", "--output-topic", output_topic,
                        "--output", str(directory), "--window", WINDOW, "--watermark", WATERMARK]
        self.starts = 0
        self.kills = 0
        self._driver: asyncio.subprocess.Process | None = None
        self._stop = asyncio.Event()

    @property
    def log(self) -> Path:
        return self.directory / "driver.log"

    async def _start(self, *options: str) -> asyncio.subprocess.Process:
        self.directory.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            log.write(f"--- {time.strftime('%H:%M:%S')} {' '.join(options) or 'streaming'}\n".encode())
            log.flush()
            env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
            return await asyncio.create_subprocess_exec(*self.command, *options, stdout=log, stderr=log,
                                                        stdin=asyncio.subprocess.DEVNULL, env=env,
                                                        start_new_session=True)

    async def run(self) -> None:
        """Keep a streaming driver running (a micro-batch every INTERVAL) until stop(); one that exits is started
        again from the checkpoint. The last one is killed -9 at stop() (the final run resumes from the checkpoint
        as after a crash)."""
        while not self._stop.is_set():
            driver = self._driver = await self._start("--interval", INTERVAL)
            self.starts += 1
            stopping = asyncio.create_task(self._stop.wait())
            exiting = asyncio.create_task(driver.wait())
            await asyncio.wait([stopping, exiting], return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if not exiting.done():
                await _kill(driver)
                return
            self.progress(f"pipeline: the driver exited with {driver.returncode}; restarting it from its checkpoint")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_RESTART_PAUSE_S):  # a pause before the restart, not a wait for a state
                    await self._stop.wait()

    def stop(self) -> None:
        self._stop.set()

    def _logged(self, log: str) -> set[int]:
        """The micro-batches in one of the Parquet query's checkpoint logs ("offsets": planned, "commits": done)."""
        path = self.directory / "checkpoints" / "parquet" / log
        return {int(p.name) for p in path.iterdir() if p.name.isdigit()} if path.exists() else set()

    def batches(self) -> int:
        """How many micro-batches the Parquet query committed."""
        return len(self._logged("commits"))

    async def kill_mid_batch(self) -> None:
        """Kill -9 the streaming driver once, in the middle of a micro-batch (its offsets logged, not committed),
        as a crash would end it; run() starts it again from its checkpoint."""
        while not self._stop.is_set():
            driver = self._driver
            if driver is not None and driver.returncode is None and self._logged("offsets") - self._logged("commits"):
                self.progress(f"pipeline: kill -9 the driver (pid {driver.pid}) in the middle of a micro-batch")
                await _kill(driver)
                self.kills += 1
                return
            await asyncio.sleep(_POLL_S)  # the checkpoint is a directory: polled

    async def streaming(self, timeout_s: float) -> bool:
        """Wait until the streaming query committed its first micro-batch (the faults start then); False at the
        deadline."""
        deadline = time.monotonic() + timeout_s
        while self.batches() == 0:
            if time.monotonic() > deadline or self._stop.is_set():
                return False
            await asyncio.sleep(_POLL_S)  # the checkpoint is a directory: polled
        return True

    async def close_windows(self) -> None:
        """Write the record that moves the watermark past every window (after the producers stopped)."""
        async with Producer(self.bootstrap, acks="all", request_timeout_ms=10_000, delivery_timeout_ms=120_000,
                            client_id="chaos-pipeline-end") as producer:
            future = await producer.send(self.end_topic, b"end", key=END_KEY.encode(),
                                         timestamp=int(time.time() * 1000) + _END_AHEAD_MS)
            await producer.flush()
            await future

    async def finish(self) -> None:
        """Run the query to completion over its checkpoint (Trigger.AvailableNow)."""
        driver = await self._start("--available-now")
        try:
            async with asyncio.timeout(_FINISH_TIMEOUT_S):
                code = await driver.wait()
        except TimeoutError:
            await _kill(driver)
            raise PipelineError(f"the pipeline did not finish within {_FINISH_TIMEOUT_S:.0f} s (see {self.log})"
                                ) from None
        if code != 0:
            raise PipelineError(f"the pipeline's last run exited with {code}:\n{self.log.read_text()[-_TAIL:]}")

    async def verdict(self, topic: str, history: Path) -> dict[str, Any]:
        """Run the query to completion and compare its output with the history's records of `topic`: the
        summary's `pipeline_missing` and `pipeline_duplicates`, and the details under `pipeline` (a pipeline that
        could not finish counts every acknowledged record as missing)."""
        outcomes = [o for o in read_history(history).outcomes if o.topic == topic]
        streamed = self.batches()
        try:
            await self.finish()
            error = None
            check = check_counts(outcomes, await asyncio.to_thread(self.counted))
        except PipelineError as e:
            error = str(e)
            check = check_counts(outcomes, {})
        return {
            "pipeline_missing": check.missing,
            "pipeline_duplicates": check.duplicates,
            "pipeline": {"counted": check.counted, "driver_starts": self.starts, "driver_kills": self.kills,
                         "batches_streamed": streamed, "batches": self.batches(), "error": error,
                         "output": str(self.directory / "counts"), "missing_examples": check.missing_examples,
                         "duplicate_examples": check.duplicate_examples},
        }

    def counted(self) -> dict[str, int]:
        """How many times the committed Parquet files count each key (the end record's left out)."""
        import pyarrow.parquet as pq

        counts: Counter[str] = Counter()
        for path in committed_files(self.directory / "counts"):
            for row in pq.read_table(path, columns=["key", "count"]).to_pylist():
                counts[row["key"]] += row["count"]
        counts.pop(END_KEY, None)
        return dict(counts)


async def _kill(driver: asyncio.subprocess.Process) -> None:
    """Kill -9 a driver's process group (the driver and its JVM), as a crash would end it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(driver.pid, signal.SIGKILL)
    await driver.wait()


def committed_files(table: Path) -> list[Path]:
    """The Parquet files the file sink's log (_spark_metadata) committed; files of a batch that did not commit are
    not among them (Spark's readers ignore them the same way)."""
    paths: set[str] = set()
    log = table / "_spark_metadata"
    for entry in log.iterdir() if log.exists() else ():
        if entry.name.isdigit() or entry.name.endswith(".compact"):
            lines = entry.read_text().splitlines()[1:]  # after the version line
            paths |= {item["path"] for item in map(json.loads, lines) if item["action"] == "add"}
    return sorted(Path(unquote(path.removeprefix("file:"))) for path in paths)
