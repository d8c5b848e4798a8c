"""The release table: what each Apache Kafka release advertises, and the one place it serves less."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kconform.codecs.releases import (
    UnknownRelease,
    kafka_release,
    kafka_releases,
    newest_covered_release,
    uncovered_versions,
)
from kconform.harness.cli import cli


def test_releases_are_ordered_and_named_as_kafka_names_them():
    names = [r.version for r in kafka_releases()]
    assert names[0] == "0.8.0" and names[-1] == "4.3" and len(names) == 33
    assert [r.key for r in kafka_releases()] == sorted(r.key for r in kafka_releases())
    assert kafka_release("3.7.0") is kafka_release("v3.7") is kafka_release("3.7")
    assert kafka_release("0.10.0").version == "0.10.0"
    with pytest.raises(UnknownRelease, match="known: 0.8.0, "):
        kafka_release("9.9")


def test_kafka_4_advertises_produce_from_v0_but_serves_it_from_v3():
    # ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION (KAFKA-18659); ProduceRequest.json is 3-13
    for version in ("4.0", "4.1", "4.3"):
        release = kafka_release(version)
        assert release.advertised[0][0] == 0 and release.served(0)[0] == 3
        assert not release.serves(0, 2) and release.serves(0, 3)
    assert kafka_release("3.9").served(0) == (0, 11) and kafka_release("3.9").serves(1, 0)
    assert not kafka_release("4.0").serves(1, 3) and kafka_release("4.0").serves(1, 4)


def test_only_releases_from_0_10_have_api_versions():
    assert [r.version for r in kafka_releases() if not r.has_api_versions] == [
        "0.8.0",
        "0.8.1",
        "0.8.2",
        "0.9",
    ]


def test_the_default_release_is_the_newest_the_codecs_cover():
    assert newest_covered_release().version == "4.1"
    assert uncovered_versions(kafka_release("4.1")) == []
    # 4.2 and 4.3 add share-group and raft versions whose definitions the extract lacks
    assert {key for key, _, _ in uncovered_versions(kafka_release("4.3"))} == {78, 79, 80, 85, 87, 90}


def test_releases_command_counts_pairs():
    result = CliRunner().invoke(cli, ["codecs", "releases", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["release"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert rows["0.8.0"] == {
        "release": "0.8.0",
        "apis": 4,
        "pairs": 4,
        "codec_pairs": 4,
        "broker_apis": 4,
        "broker_pairs": 4,
    }
    assert rows["4.3"]["pairs"] - rows["4.3"]["codec_pairs"] == 12
    assert all(r["broker_pairs"] <= r["codec_pairs"] <= r["pairs"] for r in rows.values())


def test_broker_lists_its_releases_and_refuses_an_unknown_one(tmp_path):
    listed = CliRunner().invoke(cli, ["broker", "--list-kafka-versions"])
    assert listed.exit_code == 0
    lines = listed.stdout.splitlines()
    assert len(lines) == 33 and lines[0].startswith("0.8.0") and "(default)" in lines[-3]
    refused = CliRunner().invoke(cli, ["broker", "--data-dir", str(tmp_path), "--kafka-version", "5.0"])
    assert refused.exit_code == 2 and "no Kafka release '5.0'" in refused.output
    assert not any(tmp_path.iterdir())  # refused before anything was written
