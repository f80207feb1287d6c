"""The soak's group verdict: a commit below one acknowledged before it, whichever member made it, is a regression,
and so is a committed offset read back at the end below the highest acknowledged commit."""

from __future__ import annotations

from client.chaos.group_workload import CommitHistory


def test_commits_that_only_move_forward_are_no_regression():
    history = CommitHistory()
    history.acknowledged("a", {0: 5, 1: 3})
    history.acknowledged("b", {0: 5, 1: 9})
    history.acknowledged("a", {0: 7})
    history.read_back({0: 7, 1: 9})
    assert history.regressions == []
    assert (history.successful, history.highest) == (3, {0: 7, 1: 9})


def test_a_commit_below_an_acknowledged_one_by_another_member_is_a_regression():
    history = CommitHistory()
    history.acknowledged("a", {0: 10})
    history.acknowledged("b", {0: 4, 1: 2})
    assert history.regressions == ["partition 0: b committed 4 after 10 was committed"]
    assert history.highest == {0: 10, 1: 2}


def test_an_acknowledged_commit_missing_at_the_end_is_a_regression():
    history = CommitHistory()
    history.acknowledged("a", {0: 10, 1: 3})
    history.read_back({0: 8, 1: None})
    assert history.regressions == [
        "partition 0: the group's committed offset is 8 at the end, below the acknowledged commit of 10",
        "partition 1: the group's committed offset is None at the end, below the acknowledged commit of 3"]
