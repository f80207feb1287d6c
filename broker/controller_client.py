"""Requests this broker sends to the active controller (Kafka's BrokerToControllerChannelManager): over a
connection of their own to the controller's endpoint on the inter-broker listener, as the metadata cache knows
them. The broker's controlled shutdown and the creation of __consumer_offsets go this way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from protocol.apis.topics import CreateTopicsRequest, CreateTopicsResponse
from protocol.errors import KafkaError
from transport.connection import BrokerConnection, KafkaConnectionError


class ControllerUnreachableError(Exception):
    """No controller is known, or it could not be asked (the message says why)."""


class ControllerLocation(Protocol):
    """Where the metadata cache says the controller is."""

    @property
    def controller_id(self) -> int: ...

    def endpoint(self, broker_id: int, listener_name: str) -> tuple[str, int] | None: ...


class ControllerClient:
    """Sends one request at a time to the active controller, each on a new connection."""

    def __init__(self, location: ControllerLocation, listener_name: str,
                 connect: Callable[[str, int], BrokerConnection]) -> None:
        self._location = location
        self._listener_name = listener_name
        self._connect = connect

    async def send(self, body: object) -> object:
        """The controller's answer to `body`; ControllerUnreachableError if it could not be asked."""
        endpoint = self._location.endpoint(self._location.controller_id, self._listener_name)
        if endpoint is None:
            raise ControllerUnreachableError("no controller is known")
        connection = self._connect(*endpoint)
        try:
            await connection.connect()
            return await connection.request(body)
        except (KafkaConnectionError, KafkaError, OSError) as e:
            raise ControllerUnreachableError(str(e)) from e
        finally:
            await connection.close()

    async def create_topics(self, request: CreateTopicsRequest) -> CreateTopicsResponse:
        response = await self.send(request)
        assert isinstance(response, CreateTopicsResponse)
        return response
