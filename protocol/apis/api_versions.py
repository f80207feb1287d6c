"""ApiVersions (18): which apis, at which versions, a broker serves. The handler answers with minikafka's own
table (protocol.apis.supported_api_versions); on Kafka's wire the list is the Kafka listener's own
(protocol.kafka.api.advertised).

On Kafka's wire: v0-4 (v3+ flexible, the client's software name and version in the request, KIP-511; v4 is v3's
format, for the supported features' minimum version 0 that minikafka, with no features, never sends)."""

from __future__ import annotations

from protocol.apis.api import Api, ApiKey
from protocol.codec import Int16, message
from protocol.errors import ErrorCode
from protocol.kafka.api import advertised, spec_codec


@message
class ApiVersionsRequest:
    """Ask which apis and versions a broker supports; from v3 the client names its software (KIP-511)."""

    client_software_name: str = ""
    client_software_version: str = ""


@message
class ApiVersionRange:
    """The versions of one api a broker supports."""

    api_key: Int16
    min_version: Int16
    max_version: Int16


@message
class ApiVersionsResponse:
    """Supported apis (see supported_api_versions)."""

    error_code: Int16
    api_keys: list[ApiVersionRange]


def api_versions_error(_request: ApiVersionsRequest, code: ErrorCode, _message: str | None) -> ApiVersionsResponse:
    """The answer to an ApiVersions request that failed as a whole: the error, no apis."""
    return ApiVersionsResponse(error_code=code, api_keys=[])


API_VERSIONS = Api(
    ApiKey.API_VERSIONS, "ApiVersions", ApiVersionsRequest, ApiVersionsResponse, api_versions_error,
    kafka=spec_codec("ApiVersions",
                     lambda message, _version: ApiVersionsRequest(
                         client_software_name=message["client_software_name"],
                         client_software_version=message["client_software_version"]),
                     lambda body, _version: {"error_code": body.error_code, "throttle_time_ms": 0,
                                             "api_keys": advertised() if body.error_code == ErrorCode.NONE else []}))
