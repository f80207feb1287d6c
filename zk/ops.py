"""The operations of a ZooKeeper transaction (multi), their size on the wire, and the rule that packs a long list
of them into transactions under a byte budget. Pure: no I/O.

ZooKeeper refuses any request larger than its `jute.maxbuffer` (0xfffff bytes, just under 1 MiB, unless the servers
run with -Djute.maxbuffer): it drops the client's connection, and a client that sends the request again only flaps
its session. Kafka's controller never sends one: its ZooKeeper writes are many small asynchronous requests,
pipelined. minikafka's controller writes in fenced transactions instead, so an operation list that grows with a
topic's partition count (creating or deleting a topic of thousands) is cut into transactions under the budget and
the transactions are pipelined (ZooKeeper applies one session's requests in the order they were sent).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MATCH_ANY_VERSION = -1

#: ZooKeeper's default jute.maxbuffer: the largest request (and znode) a server accepts, in bytes.
JUTE_MAXBUFFER = 0xFFFFF


def request_budget(jute_maxbuffer: int) -> int:
    """The most bytes minikafka puts in one request to servers with this jute.maxbuffer: half of it. The whole
    request must be under the limit, and so must the transaction record the server derives from it (the same
    operations with a different header, written to its log and sent to the followers; a log record over the limit
    cannot be read back, ZOOKEEPER-3496). Half keeps well clear of both, and still carries thousands of partition
    states per transaction."""
    return jute_maxbuffer // 2


#: The request budget for servers with the default jute.maxbuffer.
MAX_REQUEST_BYTES = request_budget(JUTE_MAXBUFFER)


# Operations of a multi (an atomic transaction).
@dataclass(frozen=True, slots=True)
class CheckOp:
    path: str
    version: int


@dataclass(frozen=True, slots=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequence: bool = False


@dataclass(frozen=True, slots=True)
class SetOp:
    path: str
    data: bytes
    version: int = MATCH_ANY_VERSION


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = MATCH_ANY_VERSION


Op = CheckOp | CreateOp | SetOp | DeleteOp

# Jute encodings (org.apache.zookeeper.proto): an int is 4 bytes, a string or buffer its length (an int) and its
# bytes, a vector its length and its elements.
_INT = 4
#: The frame's length prefix and the RequestHeader (xid, type).
REQUEST_HEADER_BYTES = _INT + 2 * _INT
#: A MultiHeader (type, done, err): one before each operation of a multi, and one that ends it.
MULTI_HEADER_BYTES = _INT + 1 + _INT
#: The ACL list kazoo creates znodes with: [ACL(perms, Id("world", "anyone"))].
OPEN_ACL_BYTES = _INT + _INT + (_INT + len("world")) + (_INT + len("anyone"))


def _string(text: str) -> int:
    return _INT + len(text.encode())


def op_bytes(op: Op, chroot: str = "") -> int:
    """The bytes `op` takes in a multi request (its MultiHeader included); paths go to the server under the
    client's chroot."""
    path = _string(chroot + op.path)
    match op:
        case CreateOp(_, data):
            body = path + _INT + len(data) + OPEN_ACL_BYTES + _INT  # path, data, acl, flags
        case SetOp(_, data):
            body = path + _INT + len(data) + _INT  # path, data, version
        case CheckOp() | DeleteOp():
            body = path + _INT  # path, version
    return MULTI_HEADER_BYTES + body


def multi_bytes(ops: Sequence[Op], chroot: str = "") -> int:
    """The size of a multi request of `ops`, frame included."""
    return REQUEST_HEADER_BYTES + sum(op_bytes(op, chroot) for op in ops) + MULTI_HEADER_BYTES


# A multiRead (many reads in one request, each answered on its own) is under the budget both ways: the request of
# its operations, and its answer, whose size depends on data the caller can only estimate.
#: A znode's Stat (org.apache.zookeeper.data.Stat) as ZooKeeper sends it.
STAT_BYTES = 3 * 8 + 8 + 3 * _INT + 8 + 2 * _INT + 8
#: The answer's frame length and ReplyHeader (xid, zxid, err).
REPLY_HEADER_BYTES = _INT + _INT + 8 + _INT


def read_op_bytes(path: str, chroot: str = "") -> int:
    """The bytes a getData or getChildren takes in a multiRead request (MultiHeader, path, watch flag)."""
    return MULTI_HEADER_BYTES + _string(chroot + path) + 1


def data_answer_bytes(data_bytes: int) -> int:
    """The bytes a getData of a znode holding `data_bytes` takes in the answer (an error takes less)."""
    return MULTI_HEADER_BYTES + _INT + data_bytes + STAT_BYTES


def children_answer_bytes(names_bytes: int) -> int:
    """The bytes a getChildren takes in the answer, its children's names taking `names_bytes` (each name's length
    prefix included)."""
    return MULTI_HEADER_BYTES + _INT + names_bytes


def pack_reads(paths: Sequence[str], answer_bytes: int, budget: int, chroot: str = "") -> list[range]:
    """Consecutive runs of read operations on `paths`, in order, such that a multiRead of each run and its answer
    (at `answer_bytes` an operation) both stay under `budget`. A read whose estimate is over the budget on its own
    goes alone (it is one znode, which ZooKeeper keeps under its limit)."""
    fixed = REQUEST_HEADER_BYTES + REPLY_HEADER_BYTES + 2 * MULTI_HEADER_BYTES
    room = budget - fixed
    return pack([min(read_op_bytes(path, chroot) + answer_bytes, room) for path in paths], room)


def pack(sizes: Sequence[int], budget: int) -> list[range]:
    """Consecutive runs of items (of these sizes) whose sizes add up to at most `budget` each, in order, as few
    as greedy packing gives. Raises ValueError for an item larger than the budget on its own."""
    runs: list[range] = []
    start, used = 0, 0
    for index, size in enumerate(sizes):
        if size > budget:
            raise ValueError(f"item {index} takes {size} bytes, over the budget of {budget}")
        if used + size > budget:
            runs.append(range(start, index))
            start, used = index, 0
        used += size
    if start < len(sizes):
        runs.append(range(start, len(sizes)))
    return runs
