"""Operation sizes as kazoo puts them on the wire, and the packing of operation groups into transactions under a
request budget."""

from __future__ import annotations

import pytest
from kazoo.protocol.serialization import CheckVersion, Create, Delete, SetData, Transaction
from kazoo.security import OPEN_ACL_UNSAFE

from zk.ops import (
    JUTE_MAXBUFFER,
    MAX_REQUEST_BYTES,
    REQUEST_HEADER_BYTES,
    CheckOp,
    CreateOp,
    DeleteOp,
    Op,
    SetOp,
    multi_bytes,
    op_bytes,
    pack,
    request_budget,
)

CHROOT = "/minikafka"


def kazoo_request_bytes(ops: list[Op], chroot: str) -> int:
    """What kazoo sends for a transaction of `ops`: its serialized body after the frame's length and header."""
    requests = []
    for op in ops:
        path = chroot + op.path
        match op:
            case CreateOp(_, data, ephemeral, sequence):
                requests.append(Create(path, data, OPEN_ACL_UNSAFE, int(ephemeral) | int(sequence) << 1))
            case SetOp(_, data, version):
                requests.append(SetData(path, data, version))
            case DeleteOp(_, version):
                requests.append(Delete(path, version))
            case CheckOp(_, version):
                requests.append(CheckVersion(path, version))
    return REQUEST_HEADER_BYTES + len(Transaction(requests).serialize())


def test_a_transactions_size_is_what_kazoo_serializes():
    ops: list[Op] = [
        CheckOp("/controller_epoch", 3),
        CreateOp("/brokers/topics/t/partitions"),
        CreateOp("/brokers/topics/t/partitions/0/state", b'{"leader":1,"isr":[1,2,3]}'),
        SetOp("/brokers/topics/t", b'{"version":3}', 7),
        DeleteOp("/admin/delete_topics/t"),
        CreateOp("/isr_change_notification/isr_change_", b"[]", sequence=True),
        CreateOp("/tópico/ünïcode", "naïve".encode()),
    ]
    for chroot in ("", CHROOT):
        assert multi_bytes(ops, chroot) == kazoo_request_bytes(ops, chroot)
        assert multi_bytes(ops, chroot) == multi_bytes([], chroot) + sum(op_bytes(op, chroot) for op in ops)


def test_the_default_budget_is_half_of_zookeepers_default_jute_maxbuffer():
    assert JUTE_MAXBUFFER == 1048575
    assert MAX_REQUEST_BYTES == request_budget(JUTE_MAXBUFFER) == 524287


def test_items_are_packed_in_order_into_runs_within_the_budget():
    sizes = [40, 30, 30, 50, 10, 100, 1, 99]
    runs = pack(sizes, 100)
    assert runs == [range(0, 3), range(3, 5), range(5, 6), range(6, 8)]
    assert [i for run in runs for i in run] == list(range(len(sizes)))
    assert all(sum(sizes[i] for i in run) <= 100 for run in runs)


def test_items_that_fit_together_make_one_run_and_nothing_makes_none():
    assert pack([1, 2, 3], 6) == [range(0, 3)]
    assert pack([], 10) == []


def test_an_item_over_the_budget_on_its_own_is_refused():
    with pytest.raises(ValueError, match="item 1 takes 11 bytes"):
        pack([5, 11, 5], 10)


def test_ten_thousand_partition_states_fit_in_a_few_requests():
    """A topic of 10,000 partitions (its partition znodes and states) in transactions under the default budget."""
    groups = [[CreateOp(f"/brokers/topics/big/partitions/{p}"),
               CreateOp(f"/brokers/topics/big/partitions/{p}/state",
                        b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]}')]
              for p in range(10_000)]
    check = CheckOp("/controller_epoch", 1)
    runs = pack([sum(op_bytes(op, CHROOT) for op in group) for group in groups],
                MAX_REQUEST_BYTES - multi_bytes([check], CHROOT))
    assert multi_bytes([op for group in groups for op in group], CHROOT) > JUTE_MAXBUFFER
    assert 4 <= len(runs) <= 8
    for run in runs:
        assert multi_bytes([check, *(op for i in run for op in groups[i])], CHROOT) <= MAX_REQUEST_BYTES
