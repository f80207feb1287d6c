"""A base for clients used as ``async with``: entering returns the client, leaving closes it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Self


class AsyncClosing(ABC):
    """``async with client:`` closes the client on the way out."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections and tasks."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
