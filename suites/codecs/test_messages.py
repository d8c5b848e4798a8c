"""Every (message, version) pair round-trips, through both the generated and the interpreted path."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs import DecodeError, EncodeError, UnsupportedVersionError, messages
from kconform.codecs._interpreter import decode_message, encode_message
from kconform.codecs.generate.extract import DEFINITIONS_DIR
from kconform.codecs.strategies import all_message_versions, message, sized_lists

PAIRS = all_message_versions()
# Every (message, version) of requests and responses any release spoke, 0.8.0 to 4.3 (README, Codecs).
REQUEST_RESPONSE_PAIRS = 700


def _pairs_from_extract() -> set[tuple[str, int]]:
    """Read the definitions independently of the generator: names and validVersions only."""
    pairs = set()
    for folder in ("messages", "coordinator", "metadata"):
        for path in sorted((DEFINITIONS_DIR / folder).glob("*.json")):
            doc = json.loads(path.read_text())
            lo, _, hi = doc["validVersions"].partition("-")
            for version in range(int(lo), int(hi or lo) + 1):
                pairs.add((doc["name"], version))
    return pairs


def test_every_pair_in_the_definitions_has_a_codec():
    spec_pairs = _pairs_from_extract()
    ours = {(cls.__name__, version) for cls, version in PAIRS}
    assert spec_pairs - ours == set()
    assert ours - spec_pairs == set()
    request_response = {
        (name, v)
        for name, v in spec_pairs
        if re.search(r"(Request|Response)$", name) and name not in ("RequestHeader", "ResponseHeader")
    }
    assert len(request_response) == REQUEST_RESPONSE_PAIRS


def _ids(pair):
    cls, version = pair
    return f"{cls.__name__}-v{version}"


@pytest.mark.parametrize("pair", PAIRS, ids=[_ids(p) for p in PAIRS])
@settings(max_examples=15)
@given(data=st.data())
def test_round_trip(pair, data):
    cls, version = pair
    value = data.draw(message(cls, version))
    encoded = value.encode(version)
    assert cls.decode(encoded, version) == value
    # The interpreter is an independent reading of the same schema: both paths must agree.
    assert encode_message(value, version) == encoded
    assert decode_message(cls, encoded, version) == (value, len(encoded))
    # Trailing bytes: an error by default, returned by the lenient decode.
    with pytest.raises(DecodeError, match="left over"):
        cls.decode(encoded + b"\x00", version)
    assert cls.decode_lenient(encoded + b"\x07\x08", version) == (value, b"\x07\x08")


@pytest.mark.parametrize("pair", PAIRS, ids=[_ids(p) for p in PAIRS])
@settings(max_examples=5)
@given(data=st.data())
def test_every_truncation_is_a_decode_error(pair, data):
    cls, version = pair
    encoded = data.draw(message(cls, version)).encode(version)
    # every cut of a short message; of a long one the cuts near both ends (the header, the first fields,
    # the tagged fields) and a drawn sample of the middle, since each decode runs up to its cut
    cuts = range(len(encoded))
    if len(encoded) > 256:
        sample = data.draw(st.lists(st.integers(128, len(encoded) - 129), max_size=64))
        cuts = sorted({*range(128), *range(len(encoded) - 128, len(encoded)), *sample})
    for cut in cuts:
        with pytest.raises(DecodeError) as info:
            cls.decode(encoded[:cut], version)
        assert info.value.message == cls.__name__ and info.value.version == version


def test_decode_error_names_field_and_offset():
    from kconform.codecs.messages import MetadataResponse

    value = MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=1, host="broker-1", port=9092)],
        topics=[
            MetadataResponse.MetadataResponseTopic(
                name="t",
                partitions=[
                    MetadataResponse.MetadataResponsePartition(partition_index=0, replica_nodes=[1, 2, 3])
                ],
            )
        ],
    )
    encoded = value.encode(1)
    with pytest.raises(DecodeError) as info:
        MetadataResponse.decode(encoded[:-10], 1)
    err = info.value
    assert err.message == "MetadataResponse" and err.version == 1
    assert err.field.startswith("topics[0].partitions[0]")
    assert 0 < err.offset < len(encoded)
    assert "topics[0].partitions[0]" in str(err)


def test_unknown_tagged_fields_survive_and_count_in_equality():
    from kconform.codecs.messages import FetchRequest

    value = FetchRequest(unknown_tagged_fields=((200, b""), (77, b"hi")))
    again = FetchRequest.decode(value.encode(13), 13)
    assert again.unknown_tagged_fields == ((77, b"hi"), (200, b""))  # written in tag order
    assert again != FetchRequest()


def test_tagged_field_written_only_when_not_default():
    from kconform.codecs.messages import FetchRequest

    plain = FetchRequest().encode(12)
    with_cluster = FetchRequest(cluster_id="c").encode(12)
    assert len(with_cluster) > len(plain)
    assert FetchRequest.decode(with_cluster, 12).cluster_id == "c"


def test_non_default_field_missing_from_version_is_refused():
    from kconform.codecs.messages import ProduceRequest

    with pytest.raises(EncodeError, match="transactional_id"):
        ProduceRequest(transactional_id="txn").encode(2)
    # ignorable fields are dropped silently, as Kafka does
    from kconform.codecs.messages import MetadataResponse

    MetadataResponse(throttle_time_ms=5).encode(0)


def test_encode_errors_name_the_field():
    from kconform.codecs.messages import MetadataRequest

    with pytest.raises(EncodeError, match=r"topics\[0\]\.name"):
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None)]).encode(4)
    with pytest.raises(EncodeError, match="does not fit int32"):
        messages.HeartbeatRequest(generation_id=2**40).encode(0)
    with pytest.raises(EncodeError, match="over 32767"):
        messages.HeartbeatRequest(group_id="x" * 40000).encode(4)


def test_unsupported_versions():
    from kconform.codecs.messages import ProduceRequest

    with pytest.raises(UnsupportedVersionError):
        ProduceRequest().encode(99)
    with pytest.raises(DecodeError, match="unsupported version"):
        ProduceRequest.decode(b"", 99)


def test_repr_is_valid_python():
    from uuid import UUID  # noqa: F401 - used by eval

    from kconform.codecs.messages import MetadataResponse

    value = MetadataResponse(topics=[MetadataResponse.MetadataResponseTopic(name="t", is_internal=True)])
    assert eval(repr(value), {"MetadataResponse": MetadataResponse, "UUID": UUID}) == value


def test_records_fields_are_not_copied():
    from kconform.codecs.messages import FetchResponse

    records = bytes(range(256)) * 64
    value = FetchResponse(
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic="t", partitions=[FetchResponse.PartitionData(records=records)]
            )
        ]
    )
    encoded = value.encode(12)
    decoded = FetchResponse.decode(encoded, 12).responses[0].partitions[0].records
    assert isinstance(decoded, memoryview) and decoded.obj is not None
    assert decoded == records


def test_strategies_reach_the_length_prefix_boundaries():
    """The round-trip properties draw values whose length prefixes cross a byte (compact lengths at
    127/128, compact bytes at 16383/16384, compact arrays at 127/128), not only short ones."""
    from hypothesis import find

    from kconform.codecs.messages import DescribeGroupsRequest, MetadataRequest, SaslAuthenticateRequest

    long_name = find(
        message(MetadataRequest, 12), lambda v: any(len(t.name or "") >= 128 for t in v.topics or [])
    )
    assert long_name.encode(12) and MetadataRequest.decode(long_name.encode(12), 12) == long_name
    wide = find(message(SaslAuthenticateRequest, 2), lambda v: len(v.auth_bytes) >= 16384)
    assert SaslAuthenticateRequest.decode(wide.encode(2), 2) == wide
    many = find(sized_lists(st.just("g"), 3, scalar=True), lambda groups: len(groups) >= 128)
    value = DescribeGroupsRequest(groups=many)
    assert DescribeGroupsRequest.decode(value.encode(5), 5) == value


# Kafka reads an unsigned varint into a Java int (ByteUtils.readUnsignedVarint: the fifth byte is shifted
# by 28 and its top bits fall off), so ff ff ff ff 0f is -1, and a compact length is that minus 1.
_MINUS_ONE = b"\xff\xff\xff\xff\x0f"


@pytest.mark.parametrize("pure", [True, False], ids=["pure", "native-or-pure"])
def test_a_five_byte_varint_reads_as_a_java_int(pure):
    from contextlib import nullcontext

    from kconform.codecs import _native
    from kconform.codecs._primitives import read_uvarint, read_varint
    from kconform.codecs.messages import ApiVersionsRequest, MetadataRequest

    assert read_uvarint(_MINUS_ONE, 0) == (-1, 5) and read_uvarint(b"\xff\xff\xff\xff\x7f", 0) == (-1, 5)
    assert read_uvarint(b"\x80\x80\x80\x80\x08", 0) == (-(2**31), 5)
    assert (
        read_varint(_MINUS_ONE, 0) == (-(2**31), 5)
        and read_varint(b"\xfe\xff\xff\xff\x0f", 0)[0] == 2**31 - 1
    )
    with _native.pure_python() if pure else nullcontext():
        # a nullable compact array whose length reads negative is null (MetadataRequest v9: every topic)
        every_topic = MetadataRequest(topics=None).encode(9)
        assert every_topic[0] == 0  # null, written as length 0
        assert MetadataRequest.decode(_MINUS_ONE + every_topic[1:], 9).topics is None
        # a non-nullable compact string whose length reads negative is refused
        request = ApiVersionsRequest(client_software_name="k", client_software_version="1").encode(3)
        assert request[0] == 2  # the name's compact length, 1 + 1
        with pytest.raises(DecodeError):
            ApiVersionsRequest.decode(_MINUS_ONE + request[1:], 3)
        # a tagged field whose size reads negative is refused, not read backwards
        assert request[-1] == 0  # no tagged fields
        with pytest.raises(DecodeError):
            ApiVersionsRequest.decode(request[:-1] + b"\x01\x05" + _MINUS_ONE, 3)
