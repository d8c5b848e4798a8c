"""The highest version of each API the reference client builds and reads with the semantics that
version brings (topic ids, new error fields ...). The codecs encode every version; the client only
asks for one it handles, whatever a broker offers. APIs not listed are handled at every version the
codecs have."""

from __future__ import annotations

__all__ = ["CLIENT_MAX_VERSIONS", "client_max_version"]

CLIENT_MAX_VERSIONS: dict[int, int] = {
    0: 11,  # Produce: v12 is transactions v2, v13 names topics by id
    1: 17,  # Fetch
    2: 10,  # ListOffsets
    3: 12,  # Metadata: v13 adds a top-level error code
    8: 9,  # OffsetCommit: v10 names topics by id
    9: 9,  # OffsetFetch: v10 names topics by id
    15: 5,  # DescribeGroups
    22: 5,  # InitProducerId: v6 is two-phase commit (unstable)
    27: 1,  # WriteTxnMarkers
    28: 4,  # TxnOffsetCommit
    35: 4,  # DescribeLogDirs
    60: 1,  # DescribeCluster
    66: 1,  # ListTransactions
    69: 0,  # ConsumerGroupDescribe
}


def client_max_version(api_key: int, codec_max: int) -> int:
    return min(codec_max, CLIENT_MAX_VERSIONS.get(api_key, codec_max))
