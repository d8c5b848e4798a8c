"""Rules of the connection and of API versions: what a broker does with a request at a version it does
not serve (every API it serves), an API key it does not know, and ApiVersions itself."""

from __future__ import annotations

from kconform.codecs import CodecError, api_schemas
from kconform.codecs.errors import Errors
from kconform.codecs.messages import ApiVersionsRequest

from .catalogue import Rule, RuleFailed, add, rule
from .session import RuleSession, expect, expect_error

API_VERSIONS = 18
_CLOSE_WAIT_S = 5.0


def _kebab(name: str) -> str:
    return "".join("-" + c.lower() if c.isupper() else c for c in name).lstrip("-")


def _closes_above_its_range(api_key: int):
    async def check(s: RuleSession, version: int) -> None:
        client = await s.raw()
        above = s.versions[api_key][1] + 1
        await client.send_raw(api_key, above, b"\x00" * 8)
        reply = await client.receive(_CLOSE_WAIT_S)
        expect("fate", reply.fate.value, "closed", f"v{above}, one above the advertised range")

    return check


# SocketServer.Processor.parseRequestHeader: apiVersionManager.isApiEnabled refuses a version outside
# the API's range (ApiVersions excepted), InvalidRequestException, and the channel is closed.
for _schema in api_schemas():
    if "broker" not in _schema.listeners or _schema.api_key == API_VERSIONS:
        continue
    add(
        Rule(
            id=f"protocol.unsupported-version.{_kebab(_schema.name)}",
            api=_schema.api_key,
            versions=_schema.valid_versions,
            source="SocketServer.Processor.parseRequestHeader isApiEnabled",
            text=f"A {_schema.name} request at a version above the range the broker advertises for it "
            "closes the connection, unanswered.",
            check=_closes_above_its_range(_schema.api_key),
            family="protocol",
            once=True,
        )
    )


@rule(
    "protocol.unknown-api-key-closes",
    api=API_VERSIONS,
    versions=(0, 4),
    source="RequestHeader.parse ApiKeys.forId",
    family="protocol",
    once=True,
)
async def unknown_api_key_closes(s: RuleSession, version: int) -> None:
    """A request with an API key Kafka does not define closes the connection, unanswered."""
    client = await s.raw()
    await client.send_raw(999, 0, b"")
    reply = await client.receive(_CLOSE_WAIT_S)
    expect("fate", reply.fate.value, "closed")


@rule(
    "api-versions.unsupported-version-answers-v0",
    api=API_VERSIONS,
    versions=(0, 4),
    source="KafkaApis.handleApiVersionsRequest ApiVersionsRequest.getErrorResponse",
    family="protocol",
    since="2.4",
    once=True,
)
async def api_versions_above_range(s: RuleSession, version: int) -> None:
    """An ApiVersions request at a version above the broker's range is answered at version 0 with
    UNSUPPORTED_VERSION and the versions of ApiVersions the broker serves (KIP-511)."""
    client = await s.raw()
    above = s.versions[API_VERSIONS][1] + 1
    await client.send_raw(API_VERSIONS, above, b"\x00\x00\x00", response_version=0)
    try:
        reply = await client.receive(_CLOSE_WAIT_S)
    except CodecError as exc:
        raise RuleFailed("response", "ApiVersions v0 layout", f"not readable as v0: {exc}") from None
    expect("fate", reply.fate.value, "answered")
    expect_error("error_code", reply.body.error_code, Errors.UNSUPPORTED_VERSION)
    listed = {k.api_key: (k.min_version, k.max_version) for k in reply.body.api_keys}
    expect("api_keys[ApiVersions]", listed.get(API_VERSIONS), tuple(s.versions[API_VERSIONS]))


@rule(
    "api-versions.lists-itself-from-v0",
    api=API_VERSIONS,
    versions=(0, 4),
    source="ApiVersionsResponse.createApiVersionsResponse",
    family="protocol",
)
async def api_versions_lists_itself(s: RuleSession, version: int) -> None:
    """Every ApiVersions answer lists ApiVersions itself with minimum version 0, so that any client can
    start at v0 and learn the rest."""
    client = await s.raw()
    body = await s.call(client, API_VERSIONS, version, _api_versions_request())
    expect_error("error_code", body.error_code, Errors.NONE)
    listed = {k.api_key: k.min_version for k in body.api_keys}
    expect("api_keys[ApiVersions].min_version", listed.get(API_VERSIONS), 0)


@rule(
    "api-versions.keys-listed-once-in-order",
    api=API_VERSIONS,
    versions=(0, 4),
    source="ApiVersionsResponse.filterApis",
    family="protocol",
)
async def api_versions_keys_listed_once(s: RuleSession, version: int) -> None:
    """An ApiVersions answer lists each API key once, in ascending order, each with min <= max."""
    client = await s.raw()
    body = await s.call(client, API_VERSIONS, version, _api_versions_request())
    keys = [k.api_key for k in body.api_keys]
    expect("api_keys order", keys, sorted(set(keys)))
    bad = [k.api_key for k in body.api_keys if k.min_version > k.max_version]
    expect("api_keys with min_version > max_version", bad, [])


@rule(
    "api-versions.invalid-client-software-name",
    api=API_VERSIONS,
    versions=(3, 4),
    source="KafkaApis.handleApiVersionsRequest apiVersionRequest.isValid",
    family="protocol",
    since="2.4",
)
async def api_versions_invalid_software_name(s: RuleSession, version: int) -> None:
    """From v3, a client software name or version outside [a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])? is
    refused with INVALID_REQUEST."""
    client = await s.raw()
    bad = ApiVersionsRequest(client_software_name="bad name!", client_software_version="1.0")
    body = await s.call(client, API_VERSIONS, version, bad)
    expect_error("error_code", body.error_code, Errors.INVALID_REQUEST)


@rule(
    "protocol.correlation-id-echoed",
    api=API_VERSIONS,
    versions=(0, 4),
    source="RequestChannel.Request.buildResponseSend",
    family="protocol",
)
async def correlation_id_echoed(s: RuleSession, version: int) -> None:
    """A response carries the correlation id of the request it answers, whatever its value."""
    client = await s.raw()
    for correlation_id in (0, 2**31 - 1, -7):
        await client.send(API_VERSIONS, version, _api_versions_request(), correlation_id=correlation_id)
        try:
            reply = await client.receive(_CLOSE_WAIT_S)
        except Exception as exc:  # a frame with another id: the raw client names both
            raise RuleFailed("correlation_id", correlation_id, str(exc)) from None
        expect("correlation_id", reply.correlation_id, correlation_id)
        expect("fate", reply.fate.value, "answered")


def _api_versions_request() -> ApiVersionsRequest:
    return ApiVersionsRequest(client_software_name="kconform", client_software_version="1.0")


@rule(
    "protocol.pipelined-requests-answered-in-order",
    api=API_VERSIONS,
    versions=(0, 4),
    source="SocketServer.Processor.processCompletedReceives mute",
    family="protocol",
)
async def pipelined_requests_in_order(s: RuleSession, version: int) -> None:
    """Requests sent back to back on one connection are answered in the order they were sent (the
    broker reads the next request of a connection only once the previous one is answered)."""
    client = await s.raw()
    sent = [await client.send(API_VERSIONS, version, _api_versions_request()) for _ in range(5)]
    answered = []
    for _ in sent:
        try:
            reply = await client.receive(_CLOSE_WAIT_S)
        except Exception as exc:  # an answer out of turn: the raw client names both ids
            raise RuleFailed("correlation_id order", sent, str(exc)) from None
        answered.append(reply.correlation_id if reply.answered else reply.fate.value)
    expect("correlation_id order", answered, sent)


@rule(
    "api-versions.connection-stays-open-after-unsupported-version",
    api=API_VERSIONS,
    versions=(0, 4),
    source="KafkaApis.handleApiVersionsRequest ApiVersionsRequest.getErrorResponse",
    family="protocol",
    since="2.4",
)
async def api_versions_retry_on_same_connection(s: RuleSession, version: int) -> None:
    """After answering an ApiVersions request above its range with UNSUPPORTED_VERSION, the broker keeps
    the connection open and answers the client's retry at a version it serves (KIP-511)."""
    client = await s.raw()
    above = s.versions[API_VERSIONS][1] + 1
    await client.send_raw(API_VERSIONS, above, b"\x00\x00\x00")
    first = await client.receive(_CLOSE_WAIT_S)
    expect("fate of the request above the range", first.fate.value, "answered")
    body = await s.call(client, API_VERSIONS, version, _api_versions_request())
    expect_error("error_code of the retry", body.error_code, Errors.NONE)
