"""Chaos campaigns: a target behind Toxiproxy proxies, a nemesis schedule, a workload recording a
history, and the checkers' verdicts (``kconform chaos``)."""
