"""The purgatory: a parked operation watching many keys re-checks once when many of them change together."""

from __future__ import annotations

from broker.replication.purgatory import DelayedOperation, Purgatory


class CountingOperation(DelayedOperation[str]):
    """Completes once `ready` is set; counts how often it was asked."""

    def __init__(self) -> None:
        super().__init__(timeout_ms=60_000)
        self.checks = 0
        self.ready = False

    def try_complete(self) -> bool:
        self.checks += 1
        return self.force_complete() if self.ready else False

    def result(self) -> str:
        return "done"


async def test_an_operation_watching_thousands_of_changed_keys_is_checked_once():
    purgatory = Purgatory("fetch")
    wide, narrow = CountingOperation(), CountingOperation()
    purgatory.try_complete_else_watch(wide, range(5000))
    purgatory.try_complete_else_watch(narrow, [7])
    assert purgatory.check_and_complete_all(range(5000)) == 0
    assert (wide.checks, narrow.checks) == (2, 2)  # once when parked, once now


async def test_operations_complete_through_any_of_their_keys_once():
    purgatory = Purgatory("produce")
    first, second = CountingOperation(), CountingOperation()
    purgatory.try_complete_else_watch(first, ["a", "b"])
    purgatory.try_complete_else_watch(second, ["b", "c"])
    first.ready = second.ready = True
    assert purgatory.check_and_complete_all(["c", "z"]) == 1
    assert purgatory.check_and_complete("a") == 1
    assert await first.future == await second.future == "done"
    assert purgatory.check_and_complete_all(["a", "b", "c"]) == 0
