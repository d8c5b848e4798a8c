"""``kconform diff-acls`` end to end on secured reference brokers: a broker planted with
``authorizer-allow-before-deny`` (an ALLOW wins over a matching DENY) differs from an honest one exactly
where the default set-up's DENY meets an ALLOW (bob's WRITE on pay-audit), and is the side named as
deviating from Kafka; two honest brokers show no difference; a bootstrap target reached with a
--target-config is left without the run's ACLs and topics."""

from __future__ import annotations

import asyncio
import json

from click.testing import CliRunner

from kconform.codecs.messages import MetadataRequest
from kconform.harness.cli import cli
from kconform.harness.client.config import AdminConfig
from kconform.harness.client.network import NetworkClient
from kconform.harness.client.properties import read_properties
from kconform.harness.client.security import security_from_config
from kconform.harness.diff.acl_admin import every_acl
from kconform.harness.diff.acl_reference import PROTOCOL, admin_properties, secured_properties
from kconform.harness.diff.acl_setup import load_setup
from kconform.harness.targets.reference import ReferenceTarget

PLANTED = "reference@planted=authorizer-allow-before-deny"


def _run(tmp_path, *args):
    result = CliRunner().invoke(cli, ["diff-acls", *args, "--out", str(tmp_path)])
    report = json.loads((tmp_path / "acl-diff.json").read_text()) if result.exit_code in (0, 1) else None
    return result, report


def test_the_planted_authorizer_bug_is_found_for_the_right_principal_and_probe(tmp_path):
    result, report = _run(tmp_path, "--a", "reference", "--b", PLANTED)
    assert result.exit_code == 1, result.output
    found = {(d["principal"], d["probe"]): d for d in report["differences"]}
    produce = found[("bob", "produce pay-audit")]
    assert (produce["a"], produce["b"]) == ("TOPIC_AUTHORIZATION_FAILED", "NONE")
    assert produce["deviates"] == [PLANTED] and produce["kafka"] == "TOPIC_AUTHORIZATION_FAILED"
    # the DENY WRITE is gone from the operations the planted broker reports, and nowhere else differs
    assert found[("bob", "metadata pay-audit")]["b"].endswith(",WRITE")
    assert set(found) == {("bob", "produce pay-audit"), ("bob", "metadata pay-audit")}
    assert all(d["deviates"] == [PLANTED] for d in report["differences"])
    assert report["against_kafka"]["a"] == [] and len(report["against_kafka"]["b"]) == 2
    assert report["probes_compared"] == 150 and report["notes"] == {"a": [], "b": []}
    assert "bob" in result.output and "produce pay-audit" in result.output


def test_two_honest_brokers_show_no_difference(tmp_path):
    result, report = _run(tmp_path, "--a", "reference", "--b", "reference")
    assert result.exit_code == 0, result.output
    assert report["differences"] == [] and report["probes_compared"] == 150
    assert report["against_kafka"] == {"a": [], "b": []}  # each outcome is the one Kafka's rules give
    outcomes = {(o["principal"], o["probe"]): o["a"] for o in report["outcomes"]}
    assert outcomes[("dave", "fetch orders")] == "TOPIC_AUTHORIZATION_FAILED"  # only a DENY
    assert outcomes[("alice", "join-group billing")] == "MEMBER_ID_REQUIRED"  # past the check


def test_a_bootstrap_target_is_left_as_found(tmp_path):
    setup, password = load_setup(None), "boot-admin-secret"
    broker = ReferenceTarget(
        "secured", client_protocol=PROTOCOL, broker_properties=secured_properties(setup, password)
    )
    config = tmp_path / "admin.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in admin_properties(password).items()))
    with broker:
        spec = f"bootstrap:{broker.bootstrap}"
        result, report = _run(
            tmp_path / "run", "--a", spec, "--b", "reference", "--target-config", str(config)
        )
        assert result.exit_code == 0, result.output
        assert report["prefixes"][0].startswith("kc-acl-") and report["notes"]["a"] == []
        acls, topics = asyncio.run(_what_is_left(broker.bootstrap, str(config)))
    assert acls == [] and [t for t in topics if t.startswith("kc-acl-")] == []


async def _what_is_left(bootstrap: str, config: str):
    security = security_from_config(AdminConfig(read_properties(config)))
    client = NetworkClient(bootstrap, security=security)
    try:
        every = every_acl()
        acls = (await client.send_any(29, every)).resources
        metadata = await client.send_any(3, MetadataRequest(topics=None))
        return acls, [t.name for t in metadata.topics]
    finally:
        await client.close()
