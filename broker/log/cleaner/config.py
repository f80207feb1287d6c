"""The log cleaner's broker settings, Kafka's CleanerConfig: names, defaults and checks (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from broker.log.config import LogConfigError

#: Bytes of the dedupe buffer each offset map entry stands for in Kafka's SkimpyOffsetMap: a 16-byte MD5 of the key
#: and an 8-byte offset.
BYTES_PER_ENTRY = 24
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
    def offset_map_entries(self) -> int:
        """How many keys one thread's offset map takes before it is full: its share of the dedupe buffer in Kafka's
        24-byte slots, times the load factor (Kafka's maxDesiredMapSize)."""
        slots = self.dedupe_buffer_size // max(1, self.threads) // BYTES_PER_ENTRY
        return int(slots * self.dedupe_buffer_load_factor)

