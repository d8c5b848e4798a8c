"""How KRaft frames its metadata records in ``__cluster_metadata`` (Kafka's ``MetadataRecordSerde``,
an ``AbstractApiMessageSerde``): a record's value is an unsigned varint frame version (1), an unsigned
varint record type (the record's apiKey) and an unsigned varint record version, then the record's layout
at that version; its key is null. The layouts are the generated classes in ``metadata_records``; this
module adds the three varints and the choice of class.

``METADATA_TOPIC_ID`` is Kafka's ``Uuid.METADATA_TOPIC_ID`` (``Uuid.ONE_UUID``), the id the quorum's
Fetch names the topic by."""

from __future__ import annotations

from uuid import UUID

from . import metadata_records
from ._exceptions import DecodeError
from ._primitives import read_uvarint, write_uvarint

__all__ = [
    "FRAME_VERSION",
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "decode_metadata_record",
    "encode_metadata_record",
    "record_type_of",
]

FRAME_VERSION = 1
METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = UUID(int=1)
_SHORT_MAX = 2**15 - 1
_TYPE_OF = {name: key for key, name in metadata_records.RECORD_TYPES.items()}


def record_type_of(record) -> int:
    """The record type (apiKey) of a generated metadata record instance."""
    try:
        return _TYPE_OF[type(record).__name__]
    except KeyError:
        raise TypeError(f"{type(record).__name__} is not a metadata record") from None


def encode_metadata_record(record, version: int) -> bytes:
    out = bytearray()
    write_uvarint(out, FRAME_VERSION)
    write_uvarint(out, record_type_of(record))
    write_uvarint(out, version)
    out += record.encode(version)
    return bytes(out)


def decode_metadata_record(data) -> tuple[int, int, object]:
    """(record type, version, record) of one record value; DecodeError for a header value above an
    int16, an unknown frame version, record type or version, or bytes that do not decode exactly (bytes
    left over are an error, as in ``AbstractApiMessageSerde.read``)."""
    view = memoryview(data)
    try:
        frame, pos = read_uvarint(view, 0)
        record_type, pos = read_uvarint(view, pos)
        version, pos = read_uvarint(view, pos)
    except (IndexError, ValueError) as exc:
        raise DecodeError("metadata record", None, f"truncated frame header ({exc})") from None
    if max(frame, record_type, version) > _SHORT_MAX:  # AbstractApiMessageSerde.unsignedIntToShort
        raise DecodeError("metadata record", None, "a frame header value is larger than an int16")
    if frame != FRAME_VERSION:
        raise DecodeError("metadata record", None, f"frame version {frame} is unknown (only 1 is)")
    name = metadata_records.RECORD_TYPES.get(record_type)
    if name is None:
        raise DecodeError("metadata record", version, f"record type {record_type} is unknown")
    record_class = getattr(metadata_records, name)
    return record_type, version, record_class.decode(view[pos:], version)
