"""KRaft record framing (Kafka's MetadataRecordSerde / AbstractApiMessageSerde) and the
``__cluster_metadata`` log: torn tails, replication from the controller's bytes, corrupt records."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconform.codecs import DecodeError, metadata_records
from kconform.codecs._primitives import write_uvarint
from kconform.codecs.metadata_log import decode_metadata_record, encode_metadata_record, record_type_of
from kconform.codecs.metadata_records import PartitionRecord, RegisterBrokerRecord, TopicRecord
from kconform.codecs.records import Record, encode_batch
from kconform.codecs.strategies import message
from kconform.reference_broker.cluster_metadata import CorruptMetadataLog, MetadataLog

RECORD_VERSIONS = [
    (getattr(metadata_records, name), version)
    for _, name in sorted(metadata_records.RECORD_TYPES.items())
    for version in getattr(metadata_records, name)._message_.versions
]


def header(*values: int) -> bytes:
    out = bytearray()
    for value in values:
        write_uvarint(out, value)
    return bytes(out)


@pytest.mark.parametrize(("cls", "version"), RECORD_VERSIONS, ids=lambda v: getattr(v, "__name__", str(v)))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_every_record_type_round_trips(cls, version, data):
    """AbstractApiMessageSerde.write/read: frame version 1, apiKey and version as unsigned varints."""
    record = data.draw(message(cls, version))
    encoded = encode_metadata_record(record, version)
    assert encoded.startswith(header(1, record_type_of(record), version))
    assert decode_metadata_record(encoded) == (record_type_of(record), version, record)
    with pytest.raises(DecodeError):  # "Found N byte(s) of garbage after"
        decode_metadata_record(encoded + b"\x00")


def test_record_type_is_the_api_key():
    """MetadataRecordType: RegisterBrokerRecord is 0, TopicRecord 2, PartitionRecord 3."""
    assert [record_type_of(r()) for r in (RegisterBrokerRecord, TopicRecord, PartitionRecord)] == [0, 2, 3]


@pytest.mark.parametrize(
    "value",
    [
        header(0, 2, 0),  # frame version 0: KRaft's 2.8 preview, refused
        header(2, 2, 0),  # an unknown frame version
        header(1, 6, 0),  # no record type 6
        header(1, 2, 99),  # a version TopicRecord does not have
        header(1, 40000, 0),  # above an int16
        b"\x01",  # cut inside the header
        header(1, 2, 0) + b"\x01",  # cut inside the record
    ],
)
def test_bad_frames_are_decode_errors(value):
    """AbstractApiMessageSerde.read: MetadataParseException for each of these."""
    with pytest.raises(DecodeError):
        decode_metadata_record(value)


# ---- the log -------------------------------------------------------------------------------------

TOPIC = uuid.UUID(int=0xBEEF)


def open_log(path):
    return MetadataLog.open(path, clock=lambda: 1_700_000_000_000)


def fill(log) -> None:
    """Three batches: a broker, a topic with a partition, a second broker."""
    log.append([RegisterBrokerRecord(broker_id=1, incarnation_id=uuid.UUID(int=1), broker_epoch=0)], **WRITE)
    log.append(
        [
            TopicRecord(name="t", topic_id=TOPIC),
            PartitionRecord(
                partition_id=0,
                topic_id=TOPIC,
                replicas=[1],
                isr=[1],
                leader=1,
                leader_epoch=0,
                partition_epoch=0,
            ),
        ],
        **WRITE,
    )
    log.append([RegisterBrokerRecord(broker_id=2, incarnation_id=uuid.UUID(int=2), broker_epoch=3)], **WRITE)


WRITE = {"leader_epoch": 1, "now_ms": 1_700_000_000_000}


def image_state(log):
    return sorted(log.image.brokers), [(t.name, t.partitions) for t in log.image], log.end_offset


def test_reopen_replays_the_same_image(tmp_path):
    """MetadataLoader: replaying the log from offset 0 rebuilds the image."""
    log = open_log(tmp_path)
    fill(log)
    before = image_state(log)
    log.close()
    assert image_state(open_log(tmp_path)) == before == ([1, 2], [("t", log.image.get("t").partitions)], 4)


def test_replicated_cut_batch_is_left_for_the_next_fetch(tmp_path):
    """A fetch may end inside a batch: only whole batches are appended and replayed."""
    leader = open_log(tmp_path / "leader")
    fill(leader)
    data = leader.read(0, 1 << 20)
    second_batch_end = len(leader.read(0, 1)) + len(leader.read(1, 1))
    follower = open_log(tmp_path / "follower")
    change = follower.append_replicated(data[: second_batch_end + 10], high_watermark=4)
    assert (follower.end_offset, change.topics_created, sorted(follower.image.brokers)) == (3, {"t"}, [1])
    follower.append_replicated(leader.read(follower.end_offset, 1 << 20), high_watermark=4)
    assert image_state(follower) == image_state(leader)


@settings(max_examples=30, deadline=None)
@given(cuts=st.lists(st.integers(0, 400), min_size=1, max_size=12))
def test_follower_reaches_leader_image_whatever_the_fetch_sizes(tmp_path_factory, cuts):
    """Followers fetch from their log end offset; every cut of the bytes converges on the same image."""
    root = tmp_path_factory.mktemp("log")
    leader = open_log(root / "leader")
    fill(leader)
    follower = open_log(root / "follower")
    for cut in [*cuts, 1 << 20, 1 << 20, 1 << 20]:
        follower.append_replicated(leader.read(follower.end_offset, 1 << 20)[:cut], high_watermark=4)
    assert image_state(follower) == image_state(leader)


def test_torn_tail_on_disk_is_cut_on_reopen(tmp_path):
    """Log recovery: a batch half written when the node died is truncated, the image keeps the rest."""
    log = open_log(tmp_path)
    fill(log)
    before = image_state(log)
    torn = encode_batch([Record(4, 0, None, b"\x01\x02\x00" + bytes(20))], base_offset=4)[:-7]
    (segment,) = (tmp_path / "__cluster_metadata-0").glob("*.log")
    with segment.open("ab") as f:  # no close(): as after a kill
        f.write(torn)
    reopened = open_log(tmp_path)
    assert reopened.partition_log.recovered_bytes_truncated == len(torn)
    assert image_state(reopened) == before
    reopened.close()


def test_garbage_record_is_a_corrupt_log(tmp_path):
    """MetadataRecordSerde.read fails: the log cannot be followed (CorruptMetadataLog), now or on reopen."""
    log = open_log(tmp_path)
    fill(log)
    garbage = encode_batch([Record(4, 0, None, b"\x01\x02\xff\xff")], base_offset=4, partition_leader_epoch=1)
    with pytest.raises(CorruptMetadataLog, match="offset 4"):
        log.append_replicated(garbage, high_watermark=5)
    log.close()
    with pytest.raises(CorruptMetadataLog, match="offset 4"):
        open_log(tmp_path)


def test_record_that_does_not_fit_the_image_is_a_corrupt_log(tmp_path):
    """A PartitionRecord for a topic no TopicRecord created cannot be replayed."""
    log = open_log(tmp_path)
    with pytest.raises(CorruptMetadataLog, match="which no TopicRecord created"):
        log.append([PartitionRecord(partition_id=0, topic_id=uuid.UUID(int=5), isr=[1])], **WRITE)


def test_control_batches_hold_no_metadata_records(tmp_path):
    """KRaft's RecordsIterator reads control batches (LeaderChange, snapshot markers) apart."""
    log = open_log(tmp_path)
    fill(log)
    control = encode_batch([Record(4, 0, b"\x00\x00\x00\x02", b"\x00")], base_offset=4, is_control=True)
    log.append_replicated(control, high_watermark=5)
    assert log.end_offset == 5 and sorted(log.image.brokers) == [1, 2]
