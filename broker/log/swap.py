"""A segment replacement the log cleaner left half done, finished or undone when the log is loaded (Kafka's
LogLoader: removeTempFilesAndCollectSwapFiles and the passes after it).

The cleaner replaces a group of segments in steps, each a set of renames (``broker/log/log.py``,
``Log.replace_segments``): its cleaned segment's ``.cleaned`` files become ``.swap`` files, the old segments' files
become ``.deleted`` files, the ``.swap`` files lose their suffix, and the ``.deleted`` files are removed. A crash
leaves one of these states, and loading decides from the files alone:

- ``.deleted`` and ``.tmp`` files go (their segment was replaced, or the file was never complete);
- a ``.cleaned`` file means the swap had not begun for that segment: it goes, and so does every ``.swap`` file at
  or past its offset (the renames to ``.swap`` go from the last segment to the first, so those belong to a swap
  that had not finished becoming ``.swap``);
- the ``.swap`` files left are complete cleaned segments: every other file of an offset they cover (from the first
  one's base offset to the last one's end) is an old segment that had not been renamed ``.deleted`` yet and goes,
  and the ``.swap`` files take their names.

Whatever the moment of the crash, the log is then either the old segments or the cleaned one, each readable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from broker.log.checkpoint import fsync_dir
from broker.log.segment import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX, file_with_suffix

log = logging.getLogger(__name__)

_TEMPORARY = (DELETED_SUFFIX, ".tmp")


def offset_of(path: Path) -> int | None:
    """The base offset a segment file's name starts with (``00000000000000000100.index.swap`` -> 100); None for a
    file of another kind."""
    prefix = path.name.split(".", 1)[0]
    return int(prefix) if prefix.isdigit() else None


def complete_interrupted_swaps(directory: Path, end_of_swap_segment: Callable[[int], int]) -> set[int]:
    """Finish or undo what an interrupted replacement left in ``directory`` (see the module); returns the base offsets
    of the segments that took the place of others. ``end_of_swap_segment(base)`` reads the offset after the last batch
    of the ``.swap`` segment at ``base``."""
    cleaned: list[Path] = []
    swaps: list[Path] = []
    for path in directory.iterdir():
        if path.name.endswith(_TEMPORARY):
            path.unlink()
        elif path.name.endswith(CLEANED_SUFFIX) and offset_of(path) is not None:
            cleaned.append(path)
        elif path.name.endswith(SWAP_SUFFIX) and offset_of(path) is not None:
            swaps.append(path)
    first_cleaned = min((offset_of(path) for path in cleaned), default=None)
    for path in cleaned:
        log.info("%s: removing %s, a cleaned segment whose swap had not begun", directory.name, path.name)
        path.unlink()
    valid = []
    for path in swaps:
        if first_cleaned is not None and offset_of(path) >= first_cleaned:
            log.info("%s: removing %s, part of a swap that had not begun", directory.name, path.name)
            path.unlink()
        else:
            valid.append(path)
    bases = {offset_of(path) for path in valid if path.name.endswith(".log" + SWAP_SUFFIX)}
    if not bases:
        for path in valid:  # an index whose .log.swap is gone cannot be completed
            path.unlink()
        return set()
    start, end = min(bases), max(end_of_swap_segment(base) for base in bases)
    for path in directory.iterdir():
        offset = offset_of(path)
        if offset is not None and start <= offset < end and not path.name.endswith(SWAP_SUFFIX):
            log.info("%s: removing %s, replaced by a cleaned segment", directory.name, path.name)
            path.unlink()
    for path in valid:
        log.info("%s: completing the swap of %s", directory.name, path.name)
        path.rename(file_with_suffix(path, SWAP_SUFFIX, ""))
    fsync_dir(directory)
    return bases
