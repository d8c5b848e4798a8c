"""ApiVersions (key 18): which APIs and versions this broker speaks.

A version we do not know is answered at version 0 with UNSUPPORTED_VERSION and, since KIP-511, the
versions of ApiVersions itself, so the client can retry at one we have (Kafka's ApiVersionsRequest
.getErrorResponse); a v3+ request whose client software name or version breaks Kafka's pattern gets
INVALID_REQUEST and nothing else."""

from __future__ import annotations

import re

from kconform.codecs.errors import Errors
from kconform.codecs.messages import ApiVersionsResponse

from . import handles

API_VERSIONS = 18
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _api_keys(supported: dict[int, tuple[int, int]]) -> list:
    return [
        ApiVersionsResponse.ApiVersion(api_key=key, min_version=lo, max_version=hi)
        for key, (lo, hi) in sorted(supported.items())
    ]


def unsupported_version_response(supported: dict[int, tuple[int, int]]) -> ApiVersionsResponse:
    own = {API_VERSIONS: supported[API_VERSIONS]}
    return ApiVersionsResponse(error_code=Errors.UNSUPPORTED_VERSION, api_keys=_api_keys(own))


@handles(18)
async def api_versions(broker, ctx, request) -> ApiVersionsResponse:
    if ctx.api_version >= 3 and not (
        _SOFTWARE.fullmatch(request.client_software_name)
        and _SOFTWARE.fullmatch(request.client_software_version)
    ):
        return ApiVersionsResponse(error_code=Errors.INVALID_REQUEST)
    return ApiVersionsResponse(api_keys=_api_keys(broker.dispatcher.supported_versions()))
