"""SaslHandshake and SaslAuthenticate outside an authentication: on a listener without SASL, or on a connection
already authenticated (re-authentication, KIP-368, is not served), they answer ILLEGAL_SASL_STATE as Kafka's
KafkaApis does. A SASL listener's connections answer them themselves while authenticating
(broker/network/authenticator.py)."""

from __future__ import annotations

from broker.apis.handler import Handled
from broker.network import Request, Response
from protocol.apis.quotas import DescribeClientQuotasRequest, DescribeClientQuotasResponse
from protocol.apis.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from protocol.errors import ErrorCode


async def handle_describe_client_quotas(_body: DescribeClientQuotasRequest, _request: Request) -> Handled:
    """No quotas are enforced: no entity has one."""
    return Response(DescribeClientQuotasResponse(error_code=ErrorCode.NONE))


async def handle_sasl_handshake(_body: SaslHandshakeRequest, _request: Request) -> Handled:
    return Response(SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE))


async def handle_sasl_authenticate(_body: SaslAuthenticateRequest, _request: Request) -> Handled:
    return Response(SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=
                                             "SaslAuthenticate request received after successful authentication"))
