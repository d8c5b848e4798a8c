"""``kconform toxiproxy``: the embedded Toxiproxy-compatible server on its own, for any Toxiproxy client."""

from __future__ import annotations

import asyncio

import click


@click.command()
@click.option("--listen", default="127.0.0.1:8474", show_default=True, help="HOST:PORT for the HTTP API")
def toxiproxy(listen: str) -> None:
    """Run kconform's embedded Toxiproxy-compatible server in the foreground (Ctrl-C stops it)."""
    from kconform.faults.toxiproxy.server import serve_forever

    host, _, port = listen.rpartition(":")
    if not port.isdigit():
        raise click.BadParameter(f"{listen!r} is not HOST:PORT", param_hint="--listen")

    def ready(bound) -> None:
        click.echo(f"kconform toxiproxy API listening on http://{bound[0]}:{bound[1]}")

    try:
        asyncio.run(serve_forever(host or "127.0.0.1", int(port), ready))
    except OSError as exc:
        reason = exc.strerror or exc
        raise click.ClickException(f"cannot listen on {listen}: {reason} (pick another --listen)") from None
    except KeyboardInterrupt:
        pass
