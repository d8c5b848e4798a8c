"""Secured targets: client properties in a target spec and in ``--target-config``, a conformance run
against the SASL_SSL listener of a reference broker through a ``bootstrap:`` target, and the CLI's
answers to a bad file, an unknown property and an unreadable key store (one line, exit status 2)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kconform.harness.targets.base import TargetError
from kconform.harness.targets.registry import make_target, split_target_list

from ..support.secured_reference import start_secured_broker

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    broker = start_secured_broker(tmp_path_factory.mktemp("secured-target"))
    yield broker
    broker.node.stop()


def _properties_file(path, props: dict) -> str:
    lines = [f"{key}={value}" for key, value in props.items() if key != "bootstrap.servers"]
    path.write_text("# a SASL_SSL client\n" + "\n".join(lines) + "\n")
    return str(path)


def _kconform(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "kconform.harness.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


# ---- target specs -------------------------------------------------------------------------------


def test_dotted_spec_options_are_client_properties_and_the_spec_wins_over_the_file(tmp_path):
    target = make_target(
        "bootstrap:127.0.0.1:9093@security.protocol=SSL,ssl.endpoint.identification.algorithm=",
        {"security.protocol": "SASL_SSL", "ssl.truststore.type": "PEM"},
    )
    assert target.security.protocol == "SSL"
    assert target.security.ssl_context is not None and not target.security.ssl_context.check_hostname
    assert target.security.sasl is None


def test_a_spec_with_properties_stays_one_target_in_a_list():
    specs = split_target_list("bootstrap:h:9093@security.protocol=SSL,ssl.truststore.type=PEM,reference")
    assert specs == ["bootstrap:h:9093@security.protocol=SSL,ssl.truststore.type=PEM", "reference"]


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("bootstrap:h:1@security.protocl=SSL", "did you mean security.protocol"),
        ("bootstrap:h:1@security.protocol=TLS", "security.protocol"),
        (
            "bootstrap:h:1@security.protocol=SSL,ssl.keystore.type=PEM,ssl.keystore.location=/no",
            "cannot read",
        ),
        ("reference@planted=x,colour=blue", "unknown option"),
    ],
)
def test_bad_target_properties_are_target_errors(spec, words):
    with pytest.raises(TargetError, match=words):
        make_target(spec)


def test_a_plain_target_has_no_security():
    assert make_target("bootstrap:127.0.0.1:9092").security is None


# ---- against a secured broker ------------------------------------------------------------------------


def test_a_bootstrap_target_on_sasl_ssl_answers_api_versions_and_creates_topics(secured):
    props = secured.properties("SASL_SSL", "SCRAM-SHA-512")
    target = make_target(f"bootstrap:{secured.bootstrap('SASL_SSL')}", props | {"bootstrap.servers": ""})
    with target:
        assert 17 in target.api_versions(refresh=True)
        target.create_topic("secured-made", 2)
    bad = make_target(f"bootstrap:{secured.bootstrap('SASL_SSL')}", {**props, "bootstrap.servers": ""})
    bad.secure({**props, "sasl.jaas.config": props["sasl.jaas.config"].replace("alice-scram", "nope")})
    with pytest.raises(TargetError, match="SASL_AUTHENTICATION_FAILED"):
        bad.start()


def test_conform_runs_against_the_sasl_ssl_listener_with_a_target_config(secured, tmp_path):
    config = _properties_file(tmp_path / "client.properties", secured.properties("SASL_SSL", "SCRAM-SHA-256"))
    result = _kconform(
        "conform",
        "--target",
        f"bootstrap:{secured.bootstrap('SASL_SSL')}",
        "--target-config",
        config,
        "--rule",
        "api-versions.keys-listed-once-in-order",
        "--rule",
        "api-versions.lists-itself-from-v0",
        "--no-report",
        "--out",
        str(tmp_path / "run"),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    ledger = json.loads((tmp_path / "run" / "ledger.json").read_text())
    assert (ledger["tests"], ledger["passed"]) == (10, 10), ledger  # ApiVersions v0-4, two rules each


def test_conform_without_the_config_cannot_reach_the_sasl_listener(secured, tmp_path):
    result = _kconform(
        "conform",
        "--target",
        f"bootstrap:{secured.bootstrap('SASL_SSL')}",
        "--rule",
        "api-versions.lists-itself-from-v0",
        "--no-report",
        "--out",
        str(tmp_path / "run"),
        timeout=120,
    )
    assert result.returncode == 2, result.stderr[-2000:]


# ---- CLI misuse ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "cannot read it"),
        ("security.protocol=SASL_SSL\nsasl.mechanizm=PLAIN\n", "did you mean sasl.mechanism"),
        ("=value without a name\n", "no property name"),
        (
            "security.protocol=SSL\nssl.keystore.type=PKCS12\nssl.keystore.location=KEYSTORE\n",
            "not a readable PKCS12 store",
        ),
        (
            "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=KEYSTORE\n",
            "no usable CA",
        ),
    ],
    ids=["missing-file", "unknown-property", "no-name", "bad-keystore", "bad-truststore"],
)
@pytest.mark.parametrize("command", ["conform", "diff", "diff-frames"])
def test_cli_misuse_is_one_line_and_exit_2(tmp_path, content, words, command):
    path = tmp_path / "client.properties"
    if content is not None:
        junk = tmp_path / "junk.bin"
        junk.write_bytes(b"not a key store")
        path.write_text(content.replace("KEYSTORE", str(junk)))
    targets = (
        ["--target", "bootstrap:127.0.0.1:1"] if command == "conform" else ["--a", "bootstrap:127.0.0.1:1"]
    )
    result = _kconform(command, *targets, "--target-config", str(path), timeout=60)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0], result.stderr
    assert "Traceback" not in result.stderr
