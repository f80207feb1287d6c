"""Segment files opened on demand, a bounded number at a time.

Kafka keeps a file open for every segment; with 10,000 partitions on a broker that is half of a
20,000-descriptor hard limit before a single connection. Here a segment asks for its descriptor
right before each system call, and the least recently used descriptors are closed once more than
``capacity`` are open. A descriptor must never be held across a yield or an await: it may be
closed and its number reused. A thread that works on a descriptor (fsync) pins it first, so it is
not closed under that thread.
"""

from __future__ import annotations

import os
import resource
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager


def default_capacity() -> int:
    """A quarter of the soft descriptor limit, leaving the rest for sockets and everything else."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(64, soft // 4) if soft != resource.RLIM_INFINITY else 16384


class OpenFiles:
    """At most ``capacity`` open files (more only while pinned), keyed by their owner object."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity}")
        self.capacity = capacity
        self._lock = threading.Lock()
        self._open: OrderedDict[object, int] = OrderedDict()
        self._pins: dict[object, int] = {}
        self._close_when_unpinned: set[object] = set()

    def __len__(self) -> int:
        return len(self._open)

    def descriptor(self, owner: object, path: str) -> int:
        """The open descriptor of ``path`` (opened read-write, created if missing) for ``owner``."""
        with self._lock:
            return self._descriptor(owner, path)

    def _descriptor(self, owner: object, path: str, create: bool = True) -> int:
        fd = self._open.get(owner)
        if fd is not None:
            self._open.move_to_end(owner)
            return fd
        fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
        self._open[owner] = fd
        self._close_excess()
        return fd

    @contextmanager
    def pinned(self, owner: object, path: str, *, create: bool = True) -> Iterator[int]:
        """The descriptor, kept open until the block ends (for work on another thread: every descriptor the owner
        asks for inside the block is this one). Without ``create``, FileNotFoundError if the file is not there (a
        thread other than the owner's must not bring back a file the owner removed)."""
        with self._lock:
            fd = self._descriptor(owner, path, create)
            self._pins[owner] = self._pins.get(owner, 0) + 1
        try:
            yield fd
        finally:
            with self._lock:
                left = self._pins.pop(owner) - 1
                if left:
                    self._pins[owner] = left
                elif owner in self._close_when_unpinned:
                    self._close_when_unpinned.discard(owner)
                    self._close(owner)

    def close(self, owner: object) -> None:
        """Close the owner's descriptor (at once, or when its last pin ends)."""
        with self._lock:
            if owner in self._pins:
                self._close_when_unpinned.add(owner)
            else:
                self._close(owner)

    def _close_excess(self) -> None:
        excess = len(self._open) - self.capacity
        if excess <= 0:
            return
        victims = []
        for owner in self._open:  # least recently used first
            if owner not in self._pins:
                victims.append(owner)
                if len(victims) == excess:
                    break
        for owner in victims:
            self._close(owner)

    def _close(self, owner: object) -> None:
        fd = self._open.pop(owner, None)
        if fd is not None:
            os.close(fd)


#: The broker's segment files (one broker per process).
SEGMENT_FILES = OpenFiles(default_capacity())
