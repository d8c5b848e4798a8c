"""What the dissector reassembly suites of ``harness`` share (``test_dissect_reassembly_*.py``):
hand-built Kafka request and response frames, a session of them as Scapy segments, and the exchanges
the dissector must read from them."""

from __future__ import annotations

from kconform.codecs import encode_request, encode_response, size_prefixed
from kconform.codecs.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from kconform.harness.dissect import (
    TcpConversation,
)

UNKNOWN_TOPIC = 3


TOPIC_EXISTS = 36


def _metadata(correlation_id: int, topics: list[str], version: int = 9) -> tuple[bytes, bytes]:
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics])
    response = MetadataResponse(
        topics=[
            MetadataResponse.MetadataResponseTopic(
                error_code=UNKNOWN_TOPIC if t.startswith("x") else 0, name=t
            )
            for t in topics
        ]
    )
    return _pair(3, version, correlation_id, request, response)


def _produce(correlation_id: int, topic: str, *, acks: int = 1, payload: int = 0) -> tuple[bytes, bytes]:
    request = ProduceRequest(
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=bytes(payload))],
            )
        ],
    )
    response = ProduceResponse(
        responses=[
            ProduceResponse.TopicProduceResponse(
                name=topic,
                partition_responses=[ProduceResponse.PartitionProduceResponse(index=0, base_offset=7)],
            )
        ]
    )
    return _pair(0, 8, correlation_id, request, response)


def _create(correlation_id: int, names: list[str]) -> tuple[bytes, bytes]:
    request = CreateTopicsRequest(
        topics=[
            CreateTopicsRequest.CreatableTopic(name=n, num_partitions=1, replication_factor=1) for n in names
        ],
        timeout_ms=1000,
    )
    response = CreateTopicsResponse(
        topics=[CreateTopicsResponse.CreatableTopicResult(name=n, error_code=TOPIC_EXISTS) for n in names]
    )
    return _pair(19, 5, correlation_id, request, response)


def _api_versions(correlation_id: int) -> tuple[bytes, bytes]:
    response = ApiVersionsResponse(
        api_keys=[ApiVersionsResponse.ApiVersion(api_key=0, min_version=0, max_version=11)]
    )
    return _pair(
        18,
        3,
        correlation_id,
        ApiVersionsRequest(client_software_name="t", client_software_version="1"),
        response,
    )


def _pair(api_key: int, version: int, correlation_id: int, request, response) -> tuple[bytes, bytes]:
    return (
        size_prefixed(encode_request(api_key, version, correlation_id, "tester", request)),
        size_prefixed(encode_response(api_key, version, correlation_id, response)),
    )


def _session() -> list[tuple[bytes, bytes]]:
    return [
        _api_versions(1),
        _metadata(2, ["orders", "xmissing"]),
        _create(3, ["orders", "audit"]),
        _produce(4, "orders", payload=3000),
        _metadata(5, [], version=12),
    ]


def _facts(result) -> list[tuple]:
    """What must not change however the segments are cut: everything but packet numbers and times."""
    return [
        (
            e.api_name,
            e.api_version,
            e.correlation_id,
            e.client_id,
            e.request_bytes,
            e.response_bytes,
            e.error_codes,
            e.topics,
            e.outcome,
        )
        for e in result.exchanges
    ]


EXPECTED = [
    ("ApiVersions", 3, 1, "tester", None, None, (0,), (), "pass"),
    ("Metadata", 9, 2, "tester", None, None, (0, UNKNOWN_TOPIC), ("orders", "xmissing"), "pass"),
    ("CreateTopics", 5, 3, "tester", None, None, (TOPIC_EXISTS, TOPIC_EXISTS), ("orders", "audit"), "pass"),
    ("Produce", 8, 4, "tester", None, None, (0,), ("orders",), "pass"),
    ("Metadata", 12, 5, "tester", None, None, (), (), "pass"),
]


def _expected(pairs) -> list[tuple]:
    return [
        row[:4] + (len(req), len(resp)) + row[6:] for row, (req, resp) in zip(EXPECTED, pairs, strict=False)
    ]


def _one_segment_each(pairs) -> TcpConversation:
    talk = TcpConversation()
    talk.handshake()
    for request, response in pairs:
        talk.send(request, to_server=True)
        talk.send(response, to_server=False)
    return talk
