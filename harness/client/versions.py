"""The highest version of each API the reference client builds and reads with the semantics that
version brings (topic ids, new error fields ...). The codecs encode every version; the client only
asks for one it handles, whatever a broker offers. APIs not listed are handled at every version the
codecs have."""

from __future__ import annotations

__all__ = ["CLIENT_MAX_VERSIONS", "client_max_version"]

CLIENT_MAX_VERSIONS: dict[int, int] = {
    0: 13,  # Produce: v13 names topics by id; a transaction stays at v11 (the sender's transactions-v1 cap)
    1: 18,  # Fetch: v18's HighWatermark is the follower's; a consumer leaves it at its default
    2: 11,  # ListOffsets: v11 may ask for -6, the earliest offset not yet in tiered storage
    3: 13,  # Metadata: v13 adds a top-level error code (REBOOTSTRAP_REQUIRED)
    8: 10,  # OffsetCommit: v10 names topics by id (consumer protocol, every id known: consumer.py)
    9: 10,  # OffsetFetch: v10 names topics by id (as OffsetCommit; the admin stays at v9)
    15: 6,  # DescribeGroups: v6 answers an unknown group GROUP_ID_NOT_FOUND with a message
    22: 5,  # InitProducerId: v6 is two-phase commit (unstable)
    27: 2,  # WriteTxnMarkers: v2 gives each marker its transaction version (not sent by the client)
    28: 5,  # TxnOffsetCommit: v5 only in transactions v2, which transactions.py does not run
    35: 5,  # DescribeLogDirs: v5 adds is_cordoned (not sent by the client)
    60: 2,  # DescribeCluster: v2 can list fenced brokers (admin include_fenced_brokers)
    66: 2,  # ListTransactions: v2 filters by transactional id pattern (not sent by the client)
    69: 1,  # ConsumerGroupDescribe: v1 gives each member its type (admin MemberDescription.upgraded)
}


def client_max_version(api_key: int, codec_max: int) -> int:
    return min(codec_max, CLIENT_MAX_VERSIONS.get(api_key, codec_max))
