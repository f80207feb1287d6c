"""ApiVersions: the apis and versions of minikafka's own protocol (the Kafka listener answers with its own list)."""

from __future__ import annotations

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.apis import supported_api_versions
from protocol.apis.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.errors import ErrorCode


async def handle_api_versions(_body: ApiVersionsRequest, _request: Request) -> Handled:
    return Response(ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=supported_api_versions()))
