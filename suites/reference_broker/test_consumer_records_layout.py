"""The KIP-848 consumer groups' records in ``__consumer_offsets``: their bytes, pinned.

``ROUND_TRIPS`` and ``NORMALISED`` hold the (key, value) bytes that the hand-written layouts of
``consumer_records`` wrote before the records became the classes generated from Kafka's coordinator
definitions (record type 16, ConsumerGroupRegularExpression, is still laid out by hand): every record
type, tombstones, null, empty, long and non-ASCII strings, several topics and partitions. The module must
keep writing exactly these bytes and read them back as the same records. ``WRITTEN_BY_KAFKA`` holds
values carrying what the broker reads but never writes (per-partition racks, the classic member's
metadata in tag 0, unknown tagged fields). A Hypothesis round trip covers every record type."""

from __future__ import annotations

import struct
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconform.reference_broker.groups import kip848_log_records as cr
from kconform.reference_broker.groups.classic_log_records import RecordFormatError

A = UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
B = UUID("a1b2c3d4-e5f6-4718-9a2b-3c4d5e6f7081")
C = UUID("5e3a1c9b-0000-4000-8000-000000000001")

# (record, key, value): written exactly so, and read back as the same record
ROUND_TRIPS = [
    (
        cr.GroupEpoch("g", 7),
        "0003000167",
        "00000000000700",
    ),
    (
        cr.GroupEpoch("", 0),
        "00030000",
        "00000000000000",
    ),
    (
        cr.GroupEpoch("grüppe-✓", 2**31 - 1),
        "0003000b6772c3bc7070652de29c93",
        "00007fffffff00",
    ),
    (
        cr.GroupEpoch("g", -(2**31)),
        "0003000167",
        "00008000000000",
    ),
    (
        cr.GroupEpoch("g", None),
        "0003000167",
        None,
    ),
    (
        cr.SubscriptionMetadata("g", ()),
        "0004000167",
        "00000100",
    ),
    (
        cr.SubscriptionMetadata("g", (cr.TopicMetadata(A, "orders", 3),)),
        "0004000167",
        "0000020f1e2d3c4b5a69788796a5b4c3d2e1f0076f726465727300000003010000",
    ),
    (
        cr.SubscriptionMetadata(
            "g",
            (
                cr.TopicMetadata(B, "t", 1),
                cr.TopicMetadata(A, "", 0),
                cr.TopicMetadata(C, "тема-é", 2**31 - 1),
            ),
        ),
        "0004000167",
        (
            "000004a1b2c3d4e5f647189a2b3c4d5e6f708102740000000101000f1e2d3c4b5a69788796a5b4c3d2e1f001"
            "0000000001005e3a1c9b0000400080000000000000010cd182d0b5d0bcd0b02dc3a97fffffff010000"
        ),
    ),
    (
        cr.SubscriptionMetadata("g", None),
        "0004000167",
        None,
    ),
    (
        cr.MemberSubscription("g", "m", cr.MemberSubscriptionValue(None, None, "", "", (), None, -1, None)),
        "000500016700016d",
        "0000000001010100ffffffff0000",
    ),
    (
        cr.MemberSubscription("g", "m", cr.MemberSubscriptionValue("", "", "c", "/h", ("",), "", 0, "")),
        "000500016700016d",
        "000001010263032f68020101000000000100",
    ),
    (
        cr.MemberSubscription(
            "cg",
            "member-1",
            cr.MemberSubscriptionValue(
                "inst",
                "rack-a",
                "client",
                "/127.0.0.1",
                ("orders", "payments", "ünïcode"),
                "orders.*",
                300000,
                "uniform",
            ),
        ),
        "00050002636700086d656d6265722d31",
        (
            "000005696e7374077261636b2d6107636c69656e740b2f3132372e302e302e3104076f726465727309706179"
            "6d656e74730ac3bc6ec3af636f6465096f72646572732e2a000493e008756e69666f726d00"
        ),
    ),
    (
        cr.MemberSubscription(
            "gé",
            "m✓",
            cr.MemberSubscriptionValue(
                None, None, "c" * 130, "h", tuple(f"t{i}" for i in range(130)), None, 45000, "range"
            ),
        ),
        "0005000367c3a900046de29c93",
        (
            "0000000083016363636363636363636363636363636363636363636363636363636363636363636363636363"
            "6363636363636363636363636363636363636363636363636363636363636363636363636363636363636363"
            "6363636363636363636363636363636363636363636363636363636363636363636363636363636363636363"
            "6363636302688301037430037431037432037433037434037435037436037437037438037439047431300474"
            "3131047431320474313304743134047431350474313604743137047431380474313904743230047432310474"
            "3232047432330474323404743235047432360474323704743238047432390474333004743331047433320474"
            "3333047433340474333504743336047433370474333804743339047434300474343104743432047434330474"
            "3434047434350474343604743437047434380474343904743530047435310474353204743533047435340474"
            "3535047435360474353704743538047435390474363004743631047436320474363304743634047436350474"
            "3636047436370474363804743639047437300474373104743732047437330474373404743735047437360474"
            "3737047437380474373904743830047438310474383204743833047438340474383504743836047438370474"
            "3838047438390474393004743931047439320474393304743934047439350474393604743937047439380474"
            "3939057431303005743130310574313032057431303305743130340574313035057431303605743130370574"
            "3130380574313039057431313005743131310574313132057431313305743131340574313135057431313605"
            "7431313705743131380574313139057431323005743132310574313232057431323305743132340574313235"
            "0574313236057431323705743132380574313239000000afc80672616e676500"
        ),
    ),
    (
        cr.MemberSubscription("g", "m", None),
        "000500016700016d",
        None,
    ),
    (
        cr.TargetEpoch("g", 12),
        "0006000167",
        "00000000000c00",
    ),
    (
        cr.TargetEpoch("grüppe", 0),
        "000600076772c3bc707065",
        "00000000000000",
    ),
    (
        cr.TargetEpoch("g", None),
        "0006000167",
        None,
    ),
    (
        cr.TargetMember("g", "m", {}),
        "000700016700016d",
        "00000100",
    ),
    (
        cr.TargetMember("g", "m", {A: frozenset({0})}),
        "000700016700016d",
        "0000020f1e2d3c4b5a69788796a5b4c3d2e1f002000000000000",
    ),
    (
        cr.TargetMember("g", "m", {C: frozenset({5, 1, 3}), A: frozenset({2, 0}), B: frozenset({2**31 - 1})}),
        "000700016700016d",
        (
            "0000040f1e2d3c4b5a69788796a5b4c3d2e1f0030000000000000002005e3a1c9b0000400080000000000000"
            "010400000001000000030000000500a1b2c3d4e5f647189a2b3c4d5e6f7081027fffffff0000"
        ),
    ),
    (
        cr.TargetMember("g", "m", {A: frozenset(range(200))}),
        "000700016700016d",
        (
            "0000020f1e2d3c4b5a69788796a5b4c3d2e1f0c9010000000000000001000000020000000300000004000000"
            "05000000060000000700000008000000090000000a0000000b0000000c0000000d0000000e0000000f000000"
            "100000001100000012000000130000001400000015000000160000001700000018000000190000001a000000"
            "1b0000001c0000001d0000001e0000001f000000200000002100000022000000230000002400000025000000"
            "260000002700000028000000290000002a0000002b0000002c0000002d0000002e0000002f00000030000000"
            "3100000032000000330000003400000035000000360000003700000038000000390000003a0000003b000000"
            "3c0000003d0000003e0000003f00000040000000410000004200000043000000440000004500000046000000"
            "4700000048000000490000004a0000004b0000004c0000004d0000004e0000004f0000005000000051000000"
            "52000000530000005400000055000000560000005700000058000000590000005a0000005b0000005c000000"
            "5d0000005e0000005f0000006000000061000000620000006300000064000000650000006600000067000000"
            "68000000690000006a0000006b0000006c0000006d0000006e0000006f000000700000007100000072000000"
            "730000007400000075000000760000007700000078000000790000007a0000007b0000007c0000007d000000"
            "7e0000007f000000800000008100000082000000830000008400000085000000860000008700000088000000"
            "890000008a0000008b0000008c0000008d0000008e0000008f00000090000000910000009200000093000000"
            "9400000095000000960000009700000098000000990000009a0000009b0000009c0000009d0000009e000000"
            "9f000000a0000000a1000000a2000000a3000000a4000000a5000000a6000000a7000000a8000000a9000000"
            "aa000000ab000000ac000000ad000000ae000000af000000b0000000b1000000b2000000b3000000b4000000"
            "b5000000b6000000b7000000b8000000b9000000ba000000bb000000bc000000bd000000be000000bf000000"
            "c0000000c1000000c2000000c3000000c4000000c5000000c6000000c70000"
        ),
    ),
    (
        cr.TargetMember("g", "m", None),
        "000700016700016d",
        None,
    ),
    (
        cr.CurrentAssignment("g", "m", cr.CurrentAssignmentValue(5, 4, 1, {A: frozenset({0, 1})}, {})),
        "000800016700016d",
        "0000000000050000000401020f1e2d3c4b5a69788796a5b4c3d2e1f0030000000000000001000100",
    ),
    (
        cr.CurrentAssignment("g", "m", cr.CurrentAssignmentValue(0, -1, 0)),
        "000800016700016d",
        "000000000000ffffffff00010100",
    ),
    (
        cr.CurrentAssignment(
            "cg",
            "mé",
            cr.CurrentAssignmentValue(
                -2,
                99,
                2,
                {B: frozenset({3}), A: frozenset({1, 0})},
                {C: frozenset({7, 2}), A: frozenset({4})},
            ),
        ),
        "00080002636700036dc3a9",
        (
            "0000fffffffe0000006302030f1e2d3c4b5a69788796a5b4c3d2e1f003000000000000000100a1b2c3d4e5f6"
            "47189a2b3c4d5e6f7081020000000300030f1e2d3c4b5a69788796a5b4c3d2e1f00200000004005e3a1c9b00"
            "00400080000000000000010300000002000000070000"
        ),
    ),
    (
        cr.CurrentAssignment("g", "m", None),
        "000800016700016d",
        None,
    ),
    (
        cr.RegularExpression(
            "g", "orders.*", cr.ResolvedRegex(frozenset({"orders-b", "orders-a"}), 3, 1700000000000)
        ),
        "001000016700086f72646572732e2a",
        "000003096f72646572732d61096f72646572732d6200000000000000030000018bcfe5680000",
    ),
    (
        cr.RegularExpression("g", "", cr.ResolvedRegex(frozenset())),
        "00100001670000",
        "0000010000000000000000ffffffffffffffff00",
    ),
    (
        cr.RegularExpression(
            "gé", "тема.*", cr.ResolvedRegex(frozenset({"тема-1", ""}), 2**63 - 1, -(2**63))
        ),
        "0010000367c3a9000ad182d0b5d0bcd0b02e2a",
        "000003010bd182d0b5d0bcd0b02d317fffffffffffffff800000000000000000",
    ),
    (
        cr.RegularExpression("g", "x" * 200, cr.ResolvedRegex(frozenset({"y" * 150}), 0, 0)),
        (
            "001000016700c878787878787878787878787878787878787878787878787878787878787878787878787878"
            "7878787878787878787878787878787878787878787878787878787878787878787878787878787878787878"
            "7878787878787878787878787878787878787878787878787878787878787878787878787878787878787878"
            "7878787878787878787878787878787878787878787878787878787878787878787878787878787878787878"
            "78787878787878787878787878787878787878787878787878787878787878"
        ),
        (
            "0000029701797979797979797979797979797979797979797979797979797979797979797979797979797979"
            "7979797979797979797979797979797979797979797979797979797979797979797979797979797979797979"
            "7979797979797979797979797979797979797979797979797979797979797979797979797979797979797979"
            "79797979797979797979797979797979797979797979790000000000000000000000000000000000"
        ),
    ),
    (
        cr.RegularExpression("g", "orders.*", None),
        "001000016700086f72646572732e2a",
        None,
    ),
    (  # a member on the classic protocol (GroupMetadataManager.classicGroupJoinToConsumerGroup): its
        # ClassicMemberMetadata in tag 0, as Kafka writes it (a presence byte, then the struct)
        cr.MemberSubscription(
            "g",
            "m",
            cr.MemberSubscriptionValue(
                None,
                "rack-a",
                "c",
                "/h",
                ("orders",),
                None,
                30000,
                None,
                cr.ClassicMemberMetadata(45000, (("range", b"\x00\x01"),)),
            ),
        ),
        "000500016700016d",
        "000000077261636b2d610263032f6802076f7264657273000000753000010011010000afc8020672616e67650300010000",
    ),
]

# (record, key, value, read back as): partitions with no entries are not written; key type 2 is the
# classic group's, so ``decode`` leaves it to the classic records
NORMALISED = [
    (
        cr.TargetMember("g", "m", {A: frozenset(), B: frozenset({4})}),
        "000700016700016d",
        "000002a1b2c3d4e5f647189a2b3c4d5e6f708102000000040000",
        cr.TargetMember("g", "m", {B: frozenset({4})}),
    ),
    (
        cr.CurrentAssignment(
            "g", "m", cr.CurrentAssignmentValue(3, 2, 1, {A: frozenset()}, {B: frozenset()})
        ),
        "000800016700016d",
        "0000000000030000000201010100",
        cr.CurrentAssignment("g", "m", cr.CurrentAssignmentValue(3, 2, 1)),
    ),
    (
        cr.ClassicGroupTombstone("g"),
        "0002000167",
        None,
        None,
    ),
    (
        cr.ClassicGroupTombstone("grüppe"),
        "000200076772c3bc707065",
        None,
        None,
    ),
]

# (key, value, read as): values as Kafka writes them, with fields this broker reads past
WRITTEN_BY_KAFKA = [
    (  # ConsumerGroupPartitionMetadataValue with per-partition racks
        "0004000167",
        (
            "0000030f1e2d3c4b5a69788796a5b4c3d2e1f0076f726465727300000002030000000003077261636b2d61"
            "077261636b2d620000000001010000a1b2c3d4e5f647189a2b3c4d5e6f7081027400000001020000000002"
            "077261636b2d63000000"
        ),
        cr.SubscriptionMetadata("g", (cr.TopicMetadata(A, "orders", 2), cr.TopicMetadata(B, "t", 1))),
    ),
    (  # ConsumerGroupCurrentMemberAssignmentValue with an unknown tagged field (tag 7)
        "000800016700016d",
        "0000000000040000000300020f1e2d3c4b5a69788796a5b4c3d2e1f003000000010000000000010107056c61746572",
        cr.CurrentAssignment("g", "m", cr.CurrentAssignmentValue(4, 3, 0, {A: frozenset({0, 1})})),
    ),
]


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else bytes.fromhex(text)


def _id(case) -> str:
    record = case[0]
    return f"{type(record).__name__}{'-tombstone' if case[2] is None else ''}"


@pytest.mark.parametrize("case", ROUND_TRIPS + NORMALISED, ids=_id)
def test_records_write_the_pinned_bytes(case):
    record, key, value = case[:3]
    assert record.encode() == (_bytes(key), _bytes(value))


@pytest.mark.parametrize("case", ROUND_TRIPS, ids=_id)
def test_pinned_bytes_read_back_as_the_record(case):
    record, key, value = case
    assert cr.decode(_bytes(key), _bytes(value)) == record


@pytest.mark.parametrize("case", NORMALISED, ids=_id)
def test_pinned_bytes_read_back_normalised(case):
    _, key, value, read_as = case
    assert cr.decode(_bytes(key), _bytes(value)) == read_as


@pytest.mark.parametrize("key, value, read_as", WRITTEN_BY_KAFKA)
def test_values_with_fields_the_broker_does_not_write_are_read(key, value, read_as):
    assert cr.decode(_bytes(key), _bytes(value)) == read_as


def test_every_record_type_is_pinned():
    types = {struct.unpack(">h", bytes.fromhex(key[:4]))[0] for _, key, *_ in ROUND_TRIPS + NORMALISED}
    assert types == {2, 3, 4, 5, 6, 7, 8, 16}


@pytest.mark.parametrize("key", ["0003000167", "0006000167", "000500016700016d", "001000016700016d"])
def test_a_value_version_kafka_has_not_defined_is_a_record_format_error(key):
    with pytest.raises(RecordFormatError):
        cr.decode(bytes.fromhex(key), b"\x00\x01\x00\x00\x00\x07\x00")


# ---- every record type, any content --------------------------------------------------------------------

texts = st.text(max_size=8) | st.text(min_size=120, max_size=140)
epochs = st.integers(-(2**31), 2**31 - 1)
partitions = st.dictionaries(
    st.uuids(), st.frozensets(st.integers(0, 2**31 - 1), min_size=1, max_size=4), max_size=3
)
records = st.one_of(
    st.builds(cr.GroupEpoch, texts, st.none() | epochs),
    st.builds(
        cr.SubscriptionMetadata,
        texts,
        st.none() | st.lists(st.builds(cr.TopicMetadata, st.uuids(), texts, epochs), max_size=3).map(tuple),
    ),
    st.builds(
        cr.MemberSubscription,
        texts,
        texts,
        st.none()
        | st.builds(
            cr.MemberSubscriptionValue,
            st.none() | texts,
            st.none() | texts,
            texts,
            texts,
            st.lists(texts, max_size=4).map(tuple),
            st.none() | texts,
            epochs,
            st.none() | texts,
        ),
    ),
    st.builds(cr.TargetEpoch, texts, st.none() | epochs),
    st.builds(cr.TargetMember, texts, texts, st.none() | partitions),
    st.builds(
        cr.CurrentAssignment,
        texts,
        texts,
        st.none()
        | st.builds(
            cr.CurrentAssignmentValue, epochs, epochs, st.integers(-128, 127), partitions, partitions
        ),
    ),
    st.builds(
        cr.RegularExpression,
        texts,
        texts,
        st.none()
        | st.builds(
            cr.ResolvedRegex,
            st.frozensets(texts, max_size=4),
            st.integers(-(2**63), 2**63 - 1),
            st.integers(-(2**63), 2**63 - 1),
        ),
    ),
)


@given(records)
def test_every_record_reads_back_as_written(record):
    key, value = record.encode()
    assert cr.decode(key, value) == record
    assert record.encode() == (key, value)
