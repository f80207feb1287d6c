"""The console's timeline: the brokers' state-change.log files (client/state_change_merge.py's entries) read as they
grow, new entries in time order, each as the page shows it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from client.state_change_merge import Entry, describe_entry, parse_entry


class StateChangeTail:
    """Follows state-change.log files, each under a label ("broker 1"); a file that shrank (replaced) is read again
    from its start. Reads run in the caller's thread: call `read_new` from a worker thread."""

    def __init__(self, logs: Mapping[str, Path]) -> None:
        self.logs = dict(logs)
        self._offsets = dict.fromkeys(self.logs, 0)

    def read_new(self) -> list[Entry]:
        """The complete lines written since the last call, as entries in time order (ties in the order of the
        logs, then of their lines)."""
        new: list[tuple[int, int, int, Entry]] = []
        for index, (label, path) in enumerate(self.logs.items()):
            for line_number, line in enumerate(self._new_lines(label, path)):
                entry = parse_entry(line, label)
                if entry is not None:
                    new.append((entry.time_ms, index, line_number, entry))
        return [entry for *_, entry in sorted(new, key=lambda item: item[:3])]

    def _new_lines(self, label: str, path: Path) -> list[str]:
        try:
            with path.open("rb") as file:
                size = file.seek(0, 2)
                if size < self._offsets[label]:
                    self._offsets[label] = 0
                file.seek(self._offsets[label])
                data = file.read()
        except OSError:  # not written yet (a broker that has not started), or gone
            return []
        complete = data[:data.rfind(b"\n") + 1]
        self._offsets[label] += len(complete)
        return complete.decode("utf-8", errors="replace").splitlines()


def entry_json(entry: Entry) -> dict[str, Any]:
    """An entry as the page's timeline shows it."""
    described = describe_entry(entry)
    return {"time_ms": entry.time_ms, "log": entry.log, "who": described.who, "where": described.where,
            "what": described.what, "why": described.why}
