"""The soak's duplicates check, pure: acknowledged records that the final read of the topic holds more than once
(every record the producers send has a value of its own, so a value found at two offsets was written twice, by a
retry that the partition's leader did not recognise)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from client.chaos.workload import Acked, ReadRecord


def duplicated(acked: Iterable[Acked], final: Mapping[int, Mapping[int, ReadRecord]]) -> list[str]:
    """One line per acknowledged record found at more than one offset of its partition: where it was found."""
    copies = Counter((partition, record) for partition, records in final.items() for record in records.values())
    found: list[str] = []
    for a in acked:
        record = ReadRecord(a.key, a.value)
        if copies[a.partition, record] > 1:
            offsets = sorted(o for o, r in final[a.partition].items() if r == record)
            found.append(f"partition {a.partition}: {a.value!r} at offsets {offsets}")
    return found
