"""The status line of long work: on a terminal only, never with --json, lines said through it kept above it."""

from __future__ import annotations

import io
import threading

from client.progress import Progress

ERASE = "\r\x1b[K"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_there_is_no_status_line_and_said_lines_are_plain() -> None:
    stream = io.StringIO()
    progress = Progress(stream=stream)
    progress.update("verify: 10 of 20 MB")
    with progress.ticking("run 1 of 3"):
        progress.say("run 1: 5 MB/s")
    progress.clear()
    assert stream.getvalue() == "run 1: 5 MB/s\n"


def test_with_json_there_is_no_status_line_even_on_a_terminal() -> None:
    stream = Terminal()
    progress = Progress(enabled=False, stream=stream)
    progress.update("chaos: 3 of 60 s")
    progress.say("[    1.0s] fault 1 kill")
    assert stream.getvalue() == "[    1.0s] fault 1 kill\n"


def test_on_a_terminal_the_status_line_is_rewritten_and_said_lines_go_above_it() -> None:
    stream = Terminal()
    progress = Progress(stream=stream)
    progress.update("verify: 10 of 20 MB")
    progress.update("verify: 20 of 20 MB")
    progress.say("read 400 batches")
    progress.clear()
    assert stream.getvalue() == (f"{ERASE}verify: 10 of 20 MB{ERASE}verify: 20 of 20 MB"
                                 f"{ERASE}read 400 batches\n{ERASE}verify: 20 of 20 MB{ERASE}")


def test_ticking_shows_the_time_in_the_block_and_clears_the_line_after_it() -> None:
    stream = Terminal()
    progress = Progress(stream=stream)
    shown = threading.Event()
    seen: list[float] = []

    def describe(seconds: float) -> str:
        seen.append(seconds)
        shown.set()
        return f"chaos: {seconds:.0f} of 60 s"

    with progress.ticking(describe, every_s=0.01):
        assert shown.wait(5)
    assert stream.getvalue().startswith(f"{ERASE}chaos: 0 of 60 s")
    assert stream.getvalue().endswith(ERASE)
    assert seen == sorted(seen)
    with progress.ticking("bench-log: run 2 of 3", every_s=0.01):
        pass
    assert f"{ERASE}bench-log: run 2 of 3 (0 s)" in stream.getvalue()
