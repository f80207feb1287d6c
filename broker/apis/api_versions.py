"""ApiVersions: the apis and versions of minikafka's own protocol (the Kafka listener answers with its own list). A
client naming its software (KIP-511) must name it as Kafka allows, or its request is INVALID_REQUEST; the network
layer records the name on the connection."""

from __future__ import annotations

import re

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.apis import supported_api_versions
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse, api_versions_error
from protocol.errors import ErrorCode

#: Kafka's rule for a client software name and version (ApiVersionsRequest.isValid).
SOFTWARE_NAME = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def valid_client_software(body: ApiVersionsRequest) -> bool:
    """True unless the request names a client software (name or version) that Kafka would refuse."""
    named = (body.client_software_name, body.client_software_version)
    return not any(named) or all(SOFTWARE_NAME.fullmatch(part) for part in named)


async def handle_api_versions(body: ApiVersionsRequest, _request: Request) -> Handled:
    if not valid_client_software(body):
        return Response(api_versions_error(body, ErrorCode.INVALID_REQUEST, None))
    return Response(ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=supported_api_versions()))
