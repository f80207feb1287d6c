"""Progress of long work on a terminal: one status line on stderr, rewritten in place while the work runs, and none of
it when stderr is not a terminal or the command prints JSON: what a script or a log file reads is never
interleaved with it. Lines said through the same object (events that stay) are printed everywhere, above the status
line."""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

#: Gives the status line's text from the seconds spent in the block being watched.
Describe = Callable[[float], str]
TICK_S = 0.5
_ERASE = "\r\x1b[K"


class Progress:
    """The status line of one command (`enabled` False, e.g. with --json, or a `stream` that is not a terminal: no
    status line at all). Safe to use from several threads."""

    def __init__(self, *, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.live = enabled and self.stream.isatty()
        self._status = ""
        self._lock = threading.Lock()

    def update(self, status: str) -> None:
        """Show `status` as the status line (cut to the terminal's width)."""
        if not self.live:
            return
        with self._lock:
            self._status = status
            self._draw()

    def say(self, line: str) -> None:
        """Print a line that stays (above the status line, which is drawn again below it)."""
        with self._lock:
            if self.live and self._status:
                self.stream.write(_ERASE)
            self.stream.write(line + "\n")
            if self.live and self._status:
                self._draw()
            self.stream.flush()

    def clear(self) -> None:
        """Remove the status line."""
        if not self.live:
            return
        with self._lock:
            if self._status:
                self.stream.write(_ERASE)
                self.stream.flush()
            self._status = ""

    @contextmanager
    def ticking(self, describe: Describe | str, *, every_s: float = TICK_S) -> Iterator[None]:
        """While the block runs, the status line is `describe(seconds spent in the block)` (or, for a string, the
        string and those seconds), every `every_s` (from a thread of its own, so a block that never yields to it
        still shows); cleared afterwards."""
        if not self.live:
            yield
            return
        if isinstance(describe, str):
            label = describe

            def describe(seconds: float) -> str:
                return f"{label} ({seconds:.0f} s)"

        started = time.monotonic()
        stop = threading.Event()

        def tick() -> None:
            while True:
                self.update(describe(time.monotonic() - started))
                if stop.wait(every_s):  # the ticks' cadence, ended at once by the block's end
                    return

        thread = threading.Thread(target=tick, name="progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            self.clear()

    def _draw(self) -> None:
        width = max(20, shutil.get_terminal_size().columns - 1)
        self.stream.write(_ERASE + self._status[:width])
        self.stream.flush()
