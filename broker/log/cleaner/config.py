"""The log cleaner's broker settings, Kafka's CleanerConfig: names, defaults and checks (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from broker.log.config import LogConfigError

_MIN_BUFFER_PER_THREAD = 1024 * 1024


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """``log.cleaner.*``: whether the cleaner runs, on how many threads, how long a thread with nothing to clean
    waits, and the memory that bounds each thread's offset map."""

    enable: bool = True
    threads: int = 1
    backoff_ms: int = 15_000
    dedupe_buffer_size: int = 128 * 1024 * 1024
    dedupe_buffer_load_factor: float = 0.9

    def check(self) -> None:
        """Kafka's checks of these settings; LogConfigError names the one that fails."""
        if self.threads < 0 or self.backoff_ms < 0:
            raise LogConfigError("log.cleaner.threads and log.cleaner.backoff.ms must be >= 0")
        if self.threads and self.dedupe_buffer_size // self.threads <= _MIN_BUFFER_PER_THREAD:
            raise LogConfigError("log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.")
        if not 0 < self.dedupe_buffer_load_factor <= 1:
            raise LogConfigError("log.cleaner.io.buffer.load.factor must be in (0, 1]")

    @property
    def offset_map_bytes(self) -> int:
        """The memory of one thread's offset map: its share of the dedupe buffer, filled up to the load factor
        (Kafka's maxDesiredMapSize, in bytes)."""
        return int(self.dedupe_buffer_size // max(1, self.threads) * self.dedupe_buffer_load_factor)
