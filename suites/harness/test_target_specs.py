"""Target specs name the Kafka release a reference broker answers as, in every command that takes one."""

from __future__ import annotations

import pytest

from kconform.harness.campaign import plan_campaign
from kconform.harness.chaos.scenario_set import kafka_version_of, parse_target
from kconform.harness.chaos.scenarios import load_catalogue
from kconform.harness.targets.base import TargetError
from kconform.harness.targets.registry import make_target, split_target_list, with_kafka_version


def test_reference_target_takes_a_release():
    assert make_target("reference@kafka=3.7.0").kafka_version == "3.7"
    assert make_target("reference").kafka_version is None
    target = make_target("reference@kafka=2.8,planted=list-offsets-latest-off-by-one")
    assert target.kafka_version == "2.8" and target.planted == ("list-offsets-latest-off-by-one",)
    with pytest.raises(TargetError, match="no Kafka release '7.1'"):
        make_target("reference@kafka=7.1")
    with pytest.raises(TargetError, match="unknown option"):
        make_target("rdkafka-mock@kafka=3.7")


def test_target_lists_keep_options_together():
    assert split_target_list("reference@kafka=3.7,planted=x, rdkafka-mock:3,,bootstrap:h:9092") == [
        "reference@kafka=3.7,planted=x",
        "rdkafka-mock:3",
        "bootstrap:h:9092",
    ]
    assert with_kafka_version("reference", "3.9") == "reference@kafka=3.9"
    assert with_kafka_version("reference@planted=x", "3.9") == "reference@planted=x,kafka=3.9"
    assert with_kafka_version("reference@kafka=2.0", "3.9") == "reference@kafka=2.0"
    assert with_kafka_version("rdkafka-mock", "3.9") == "rdkafka-mock"


def test_chaos_and_the_campaign_plan_take_a_versioned_reference():
    assert parse_target("reference@kafka=3.9") == ("reference", 1)
    assert kafka_version_of("reference@kafka=v3.9") == "3.9" and kafka_version_of("rdkafka-mock:3") is None
    with pytest.raises(ValueError, match="only the reference broker's kafka=VERSION"):
        parse_target("reference@planted=x")
    plan = plan_campaign(
        ["reference@kafka=3.7", "rdkafka-mock"], 480, load_catalogue(), diff=True, chaos=True
    )
    assert plan.diff_pairs == (("reference@kafka=3.7", "rdkafka-mock"),)
    assert any(target == "reference@kafka=3.7" for target, _ in plan.chaos)
