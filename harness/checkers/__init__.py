"""Checkers over operation histories: did a Kafka-protocol system keep Kafka's promises while faults
hit it? A workload records what it asked and what came back (``history.py``); each check reads that
record and reports the anomalies it finds with the smallest stretch of history that shows each."""

from .history import History, Op, Poll, Send
from .report import Verdict, check_history, expected_anomalies

__all__ = ["History", "Op", "Poll", "Send", "Verdict", "check_history", "expected_anomalies"]
