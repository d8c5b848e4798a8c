"""librdkafka's mock cluster in a process of its own. The mock runs inside librdkafka, in C: a request it
cannot handle can abort the whole process (an assertion), and a harness that hosted it in-process would
die with it. Run here, a crash is something the harness observes, reports and recovers from.

Protocol on stdin/stdout, one JSON object a line: the process first prints
``{"bootstrap": "..."}``, then answers each command ``{"op": "create_topic", "args": [...]}`` with
``{"ok": true}`` or ``{"error": "..."}``. End of input stops the cluster."""

from __future__ import annotations

import json
import sys

from .rdkafka_mock import RdkafkaMockCluster

_COMMANDS = {
    "create_topic",
    "set_broker_down",
    "set_broker_up",
    "set_rtt",
    "set_partition_leader",
    "set_broker_host_port",
    "push_request_errors",
    "set_group_initial_rebalance_delay",
}


def main(argv: list[str]) -> int:
    brokers = int(argv[0]) if argv else 1
    with RdkafkaMockCluster(brokers) as cluster:
        print(json.dumps({"bootstrap": cluster.bootstrap}), flush=True)
        for line in sys.stdin:
            try:
                command = json.loads(line)
                if command.get("op") not in _COMMANDS:
                    raise ValueError(f"unknown command {command.get('op')!r}")
                getattr(cluster, command["op"])(*command.get("args", []))
                reply = {"ok": True}
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller
                reply = {"error": f"{type(exc).__name__}: {exc}"}
            print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
