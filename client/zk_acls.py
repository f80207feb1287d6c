"""ACLs read and changed in ZooKeeper directly, as `kafka-acls --authorizer-properties zookeeper.connect=...` does:
the way to write the first ACLs (the brokers' own) before the brokers enforce any. The brokers see the changes
through the notifications written with them."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType

from client.admin import AdminError
from protocol.acls import AclBinding, AclBindingFilter, AclFormatError, check_binding, check_filter
from protocol.errors import ErrorCode
from zk import acls as store
from zk.client import ZkClient, ZkError


class ZkAcls:
    """The ACL calls of the admin client (describe_acls, create_acls, delete_acls), answered from ZooKeeper."""

    def __init__(self, connect: str, chroot: str) -> None:
        self._zk = ZkClient(connect, chroot=chroot)

    async def __aenter__(self) -> ZkAcls:
        try:
            await self._zk.start()
            await store.ensure_acl_paths(self._zk)
        except (ZkError, TimeoutError, OSError) as e:
            await self._zk.close()
            raise AdminError(ErrorCode.NETWORK_EXCEPTION, f"ZooKeeper {self._zk.connect}: {e}") from None
        return self

    async def __aexit__(self, _type: type[BaseException] | None, _error: BaseException | None,
                        _traceback: TracebackType | None) -> None:
        await self._zk.close()

    async def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        check_filter(acl_filter)
        return [AclBinding(pattern, entry) for pattern, entries in sorted((await store.read_all(self._zk)).items())
                for entry in sorted(entries) if acl_filter.matches(AclBinding(pattern, entry))]

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[tuple[ErrorCode, str | None]]:
        results: list[tuple[ErrorCode, str | None]] = []
        for binding in bindings:
            try:
                check_binding(binding)
                results.append((ErrorCode.NONE, None))
            except AclFormatError as e:
                results.append((ErrorCode.INVALID_REQUEST, str(e)))
        valid = [b for b, (code, _) in zip(bindings, results, strict=True) if code == ErrorCode.NONE]
        await store.change_bindings(self._zk, valid, store.add_entries)
        return results

    async def delete_acls(self, filters: Sequence[AclBindingFilter]
                          ) -> list[tuple[ErrorCode, str | None, list[AclBinding]]]:
        matched = [await self.describe_acls(f) for f in filters]
        await store.change_bindings(self._zk, [b for bindings in matched for b in bindings], store.remove_entries)
        return [(ErrorCode.NONE, None, bindings) for bindings in matched]
