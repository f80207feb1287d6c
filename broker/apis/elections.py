"""ElectLeaders, answered by the controller."""

from __future__ import annotations

from typing import Protocol

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.apis.elections import ElectLeadersRequest, ElectLeadersResponse


class LeaderElector(Protocol):
    """The controller's part in an election asked for."""

    async def elect_leaders(self, request: ElectLeadersRequest) -> ElectLeadersResponse: ...


async def handle_elect_leaders(controller: LeaderElector, body: ElectLeadersRequest, _request: Request) -> Handled:
    return Response(await controller.elect_leaders(body))
