"""``python -m kconform.faults.toxiproxy``: the embedded server with ``toxiproxy-server``'s command line
(Shopify/toxiproxy cmd/server/server.go ``parseArguments``: ``-host`` (default localhost), ``-port``
(8474), ``-config``, ``-version``; ``-seed`` and the metrics flags are accepted and ignored, ``-seed``
as Toxiproxy itself ignores it: ``run`` builds a ``rand.New`` from it and drops it), so it can stand
wherever a ``toxiproxy-server`` binary is expected. SIGTERM and SIGINT stop it cleanly."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from .api import VERSION
from .server import serve_forever

_VALUED = {"host", "port", "config", "seed"}
_SWITCHES = {"version", "proxy-metrics", "runtime-metrics"}


def parse_flags(argv: list[str]) -> dict[str, str]:
    """Go's ``flag`` syntax: ``-name value``, ``-name=value``, ``--name``; switches take no value."""
    flags: dict[str, str] = {}
    args = iter(argv)
    for arg in args:
        if not arg.startswith("-") or arg in ("-", "--"):
            raise SystemExit(f"flag provided but not defined: {arg} (usage: -host HOST -port PORT)")
        name, eq, value = arg.lstrip("-").partition("=")
        if name in _SWITCHES:
            flags[name] = value if eq else "true"
        elif name in _VALUED:
            flags[name] = value if eq else next(args, "")
        else:
            raise SystemExit(f"flag provided but not defined: -{name}")
    return flags


async def _serve(host: str, port: int, config: bytes | None) -> None:
    task = asyncio.ensure_future(serve_forever(host, port, _ready, config=config))
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, task.cancel)
    try:
        await task
    except asyncio.CancelledError:
        pass


def _ready(bound: tuple[str, int]) -> None:
    print(f"kconform toxiproxy-server: API listening on {bound[0]}:{bound[1]}", flush=True)


def main(argv: list[str] | None = None) -> int:
    flags = parse_flags(sys.argv[1:] if argv is None else argv)
    if flags.get("version", "false") == "true":
        print(f"toxiproxy-server version {VERSION}")
        return 0
    config = Path(flags["config"]).read_bytes() if flags.get("config") else None
    asyncio.run(_serve(flags.get("host", "localhost"), int(flags.get("port", "8474")), config))
    return 0


if __name__ == "__main__":
    sys.exit(main())
