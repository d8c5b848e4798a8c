"""Where the fields of a batch lie: the wire layout every record-batch module reads and writes by,
and the one error they raise for bad input."""

from __future__ import annotations

import struct

from ._exceptions import DecodeError

__all__ = [
    "COMPRESSION_MASK",
    "CONTROL_BIT",
    "DELETE_HORIZON_BIT",
    "INT32",
    "INT64",
    "LEGACY_MIN_LENGTH",
    "LOG_OVERHEAD",
    "MAGIC_OFFSET",
    "TIMESTAMP_TYPE_BIT",
    "TRANSACTIONAL_BIT",
    "UINT32",
    "V2_ATTRIBUTES_OFFSET",
    "V2_CRC_OFFSET",
    "V2_HEADER",
    "V2_HEADER_SIZE",
    "V2_MIN_LENGTH",
    "batch_error",
]

# The attribute bits (magic 2 has all; magic 0/1 only the codec and, for magic 1, the timestamp type).
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

LOG_OVERHEAD = 12  # offset int64 + size int32, common to every magic
MAGIC_OFFSET = 16  # v2: after partition leader epoch; legacy: after crc
V2_HEADER = struct.Struct(">qiibIhiqqqhii")
V2_HEADER_SIZE = V2_HEADER.size  # 61
V2_MIN_LENGTH = V2_HEADER_SIZE - LOG_OVERHEAD  # 49
V2_CRC_OFFSET = 17
V2_ATTRIBUTES_OFFSET = 21
LEGACY_MIN_LENGTH = (14, 22)  # crc, magic, attributes, [timestamp], key length, value length
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT32 = struct.Struct(">I")


def batch_error(magic: int, reason: str, field: str | None = None, offset: int | None = None) -> DecodeError:
    message = "RecordBatch" if magic >= 2 else "LegacyMessageSet"
    return DecodeError(message, magic, reason, field=field, offset=offset)
