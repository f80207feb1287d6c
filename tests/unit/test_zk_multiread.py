"""ZooKeeper's multiRead as minikafka puts it on the wire and reads its answer (Jute byte for byte), the sizes the
request budget counts for it, and the packing of many reads into requests whose answers stay under the budget."""

from __future__ import annotations

import struct

from kazoo.exceptions import NoAuthError, NoNodeError

from zk.multiread import MULTI_READ, MultiRead, get_children, get_data
from zk.ops import (
    REPLY_HEADER_BYTES,
    REQUEST_HEADER_BYTES,
    STAT_BYTES,
    children_answer_bytes,
    data_answer_bytes,
    pack_reads,
    read_op_bytes,
)

GET_DATA, GET_CHILDREN, ERROR = 4, 8, -1
STAT = (11, 12, 1_700_000_000_000, 1_700_000_000_500, 3, 0, 0, 0x1234, 2, 0, 13)


def jute_string(text: str) -> bytes:
    return struct.pack("!i", len(text.encode())) + text.encode()


def multi_header(op_type: int, done: bool, err: int) -> bytes:
    return struct.pack("!iBi", op_type, done, err)


def stat_bytes(stat: tuple[int, ...]) -> bytes:
    return struct.pack("!qqqqiiiqiiq", *stat)


def test_a_multiread_request_is_jutes_multi_operation_record_of_reads():
    request = MultiRead((get_data("/m/brokers/ids/1"), get_children("/m/brokers/topics")))
    assert request.type == MULTI_READ == 22
    expected = (
        multi_header(GET_DATA, False, -1) + jute_string("/m/brokers/ids/1") + b"\x00"
        + multi_header(GET_CHILDREN, False, -1) + jute_string("/m/brokers/topics") + b"\x00"
        + multi_header(-1, True, -1)
    )
    assert bytes(request.serialize()) == expected


def test_a_multiread_answer_gives_data_children_and_each_operations_own_error():
    answer = (
        b"ignored before the offset"
        + multi_header(GET_DATA, False, 0) + struct.pack("!i", 3) + b"abc" + stat_bytes(STAT)
        + multi_header(ERROR, False, -101) + struct.pack("!i", -101)
        + multi_header(GET_CHILDREN, False, 0) + struct.pack("!i", 2) + jute_string("0") + jute_string("17")
        + multi_header(GET_DATA, False, 0) + struct.pack("!i", -1) + stat_bytes(STAT)
        + multi_header(ERROR, False, -102) + struct.pack("!i", -102)
        + multi_header(-1, True, -1)
    )
    request = MultiRead((get_data("/a"), get_data("/gone"), get_children("/p"), get_data("/empty"),
                         get_data("/secret")))
    data, missing, children, empty, refused = request.deserialize(answer, len(b"ignored before the offset"))
    assert data[0] == b"abc" and (data[1].version, data[1].ephemeralOwner, data[1].dataLength) == (3, 0x1234, 2)
    assert isinstance(missing, NoNodeError)
    assert children == ["0", "17"]
    assert empty[0] == b""  # a znode without data (null buffer) reads as empty, as kazoo's get
    assert isinstance(refused, NoAuthError)


def test_read_sizes_are_what_goes_on_the_wire():
    paths = ["/brokers/topics/t/partitions/0/state", "/tópico/ünïcode"]
    for chroot in ("", "/minikafka"):
        request = MultiRead(tuple(get_data(chroot + path) for path in paths))
        body = len(request.serialize())
        assert body == sum(read_op_bytes(path, chroot) for path in paths) + len(multi_header(-1, True, -1))
    assert len(stat_bytes(STAT)) == STAT_BYTES
    assert 4 + len(struct.pack("!iqi", 1, 2, 0)) == REPLY_HEADER_BYTES
    assert data_answer_bytes(3) == len(multi_header(GET_DATA, False, 0) + struct.pack("!i", 3) + b"abc"
                                       + stat_bytes(STAT))
    names = jute_string("0") + jute_string("17")
    assert children_answer_bytes(len(names)) == len(multi_header(GET_CHILDREN, False, 0) + struct.pack("!i", 2)
                                                    + names)


def test_reads_are_packed_so_that_request_and_answer_stay_under_the_budget():
    paths = [f"/brokers/topics/t/partitions/{p}/state" for p in range(10_000)]
    budget, answer = 64 * 1024, data_answer_bytes(120)
    runs = pack_reads(paths, answer, budget, "/minikafka")
    assert [i for run in runs for i in run] == list(range(len(paths)))
    assert 1 < len(runs) < 50
    for run in runs:
        request = REQUEST_HEADER_BYTES + len(MultiRead(tuple(get_data("/minikafka" + paths[i]) for i in run))
                                             .serialize())
        assert request <= budget
        assert REPLY_HEADER_BYTES + len(run) * answer + len(multi_header(-1, True, -1)) <= budget


def test_a_read_estimated_over_the_budget_goes_alone():
    runs = pack_reads(["/a", "/big", "/b"], 100_000, 64 * 1024)
    assert runs == [range(0, 1), range(1, 2), range(2, 3)]
