"""ZooKeeper's multiRead (OpCode 22, ZooKeeper 3.6+) as a request kazoo can send: many getData and getChildren
operations in one request, each answered on its own (not atomic: a missing znode is an error for that operation
only). kazoo has no multiRead; this builds it on kazoo's serialization primitives, and `zk.client` sends it as
any kazoo request (an object with `type`, `serialize()` and `deserialize()`).

On the wire (org.apache.zookeeper.MultiOperationRecord and MultiResponse): per operation a MultiHeader (its type,
done false, err -1) and its request record (path, watch false); a MultiHeader (-1, done, -1) ends it. The answer
holds per operation a MultiHeader (type, done false, err) and a GetDataResponse (data, stat), a
GetChildrenResponse (children) or, with type -1, an ErrorResponse (err); the same end header closes it.
"""

from __future__ import annotations

from typing import NamedTuple

from kazoo.exceptions import EXCEPTIONS, KazooException
from kazoo.protocol.serialization import (
    GetChildren,
    GetData,
    MultiHeader,
    int_struct,
    multiheader_struct,
    read_buffer,
    read_string,
    stat_struct,
)
from kazoo.protocol.states import ZnodeStat

MULTI_READ = 22
_ERROR = -1

ReadOp = GetData | GetChildren
ReadResult = tuple[bytes, ZnodeStat] | list[str] | KazooException


def get_data(path: str) -> GetData:
    """A getData operation of a multiRead (full path: chroot included; no watch)."""
    return GetData(path, None)


def get_children(path: str) -> GetChildren:
    """A getChildren operation of a multiRead (full path: chroot included; no watch)."""
    return GetChildren(path, None)


class MultiRead(NamedTuple):
    """A multiRead request; kazoo sends it and calls `deserialize` on its answer."""

    ops: tuple[ReadOp, ...]
    type = MULTI_READ

    def serialize(self) -> bytearray:
        body = bytearray()
        for op in self.ops:
            body += MultiHeader(op.type, False, _ERROR).serialize()
            body += op.serialize()
        return body + multiheader_struct.pack(_ERROR, True, _ERROR)

    def deserialize(self, buffer: bytes, offset: int) -> list[ReadResult]:
        """Per operation, in order: (data, stat) of a getData, the children of a getChildren, or the exception of
        its error code."""
        results: list[ReadResult] = []
        while True:
            header, offset = MultiHeader.deserialize(buffer, offset)
            if header.done:
                return results
            if header.type == GetData.type:
                data, offset = read_buffer(buffer, offset)
                results.append((data or b"", ZnodeStat._make(stat_struct.unpack_from(buffer, offset))))
                offset += stat_struct.size
            elif header.type == GetChildren.type:
                (count,), offset = int_struct.unpack_from(buffer, offset), offset + int_struct.size
                children: list[str] = []
                for _ in range(count):
                    child, offset = read_string(buffer, offset)
                    children.append(child)
                results.append(children)
            elif header.type == _ERROR:
                (code,), offset = int_struct.unpack_from(buffer, offset), offset + int_struct.size
                results.append(EXCEPTIONS[code]())
            else:
                raise ValueError(f"multiRead answer: an operation result of type {header.type}")
