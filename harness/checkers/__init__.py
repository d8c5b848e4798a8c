"""Checkers over operation histories: did a Kafka-protocol system keep Kafka's promises while faults
hit it? A workload records what it asked and what came back (``history.py``); each check reads that
record and reports the anomalies it finds with the smallest stretch of history that shows each. What a
run may show follows from its settings and its scenario's promise (``promises.py``)."""

from .history import History, LeaderChange, Op, Poll, Send
from .promises import Promise, WorkloadSettings, allowed_anomalies, verdict_reasons
from .report import Verdict, check_history, expected_anomalies

__all__ = [
    "History",
    "LeaderChange",
    "Op",
    "Poll",
    "Promise",
    "Send",
    "Verdict",
    "WorkloadSettings",
    "allowed_anomalies",
    "check_history",
    "expected_anomalies",
    "verdict_reasons",
]
