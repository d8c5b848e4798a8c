"""The reference broker's command line: run one node in this process. ``python -m
kconform.reference_broker`` runs it on its own, and ``kconform broker`` is the same command under the
harness's group, so both take the same options; nothing here imports the harness."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

import click

__all__ = ["broker", "main", "parse_overrides"]


def _parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise click.BadParameter(f"expected HOST:PORT (e.g. 127.0.0.1:9092), got {value!r}")
    return host or "0.0.0.0", int(port)


def parse_overrides(items: tuple[str, ...]) -> dict[str, str]:
    """``key=value`` command-line broker properties."""
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected key=value (a Kafka broker property), got {item!r}")
        overrides[key.strip()] = value.strip()
    return overrides


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="where the partition logs and metadata live (log.dirs)",
)
@click.option(
    "--listen",
    help="HOST:PORT to accept clients on (default 127.0.0.1:9092; with the listeners property, where its "
    "first listener binds)",
)
@click.option("--node-id", type=int, default=1, show_default=True, help="node.id")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="a Kafka server.properties file",
)
@click.option("--advertise", help="HOST:PORT to tell clients (default: the listen address)")
@click.option(
    "--controller",
    help="HOST:PORT of the cluster's controller: run a broker of that cluster (process.roles=broker, "
    "controller.quorum.bootstrap.servers=HOST:PORT) instead of a single combined node",
)
@click.option(
    "--kafka-version",
    help="the Apache Kafka release to answer as: its ApiVersions and the versions it serves "
    "(default: the newest release the codecs cover; see --list-kafka-versions)",
)
@click.option(
    "--list-kafka-versions",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=lambda ctx, _param, value: _list_kafka_versions(ctx) if value else None,
    help="list the releases --kafka-version takes and exit",
)
@click.option("--log-level", default="INFO", show_default=True)
@click.argument("overrides", nargs=-1)
def broker(
    data_dir: Path,
    listen: str | None,
    node_id: int,
    config_file: Path | None,
    advertise: str | None,
    controller: str | None,
    kafka_version: str | None,
    log_level: str,
    overrides: tuple[str, ...],
) -> None:
    """Run one reference node: a single combined broker and controller by default, a broker of a
    cluster with --controller, or the cluster's controller with process.roles=controller. OVERRIDES
    are Kafka properties as key=value."""
    from kconform.codecs.releases import UnknownRelease, kafka_release, newest_covered_release

    try:
        release = kafka_release(kafka_version) if kafka_version else newest_covered_release()
    except UnknownRelease as exc:
        raise click.BadParameter(str(exc), param_hint="--kafka-version") from None
    from .config import ConfigError, UnsupportedConfigError
    from .node import BrokerNode
    from .planted import PlantedBugError, check_environment

    try:
        planted = check_environment()
    except PlantedBugError as exc:
        raise click.ClickException(str(exc)) from None

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from .log_dedupe import install as dedupe_repeated_logs

    dedupe_repeated_logs()  # e.g. asyncio's accept loop out of file descriptors: once, then a count
    if planted:
        log = logging.getLogger("kconform.broker")
        log.warning("planted bugs active (test only): %s", ", ".join(sorted(planted)))
    host, port = _parse_listen(listen) if listen else (None, None)
    props = parse_overrides(overrides)
    props.setdefault("node.id", str(node_id))
    props["log.dirs"] = str(data_dir)
    _check_data_dir(data_dir, props["node.id"])
    if host is None and "listeners" not in props and not _file_sets(config_file, "listeners"):
        host, port = "127.0.0.1", 9092
    if controller:
        _parse_listen(controller)
        props["controller.quorum.bootstrap.servers"] = controller
        props.setdefault("process.roles", "broker")
    advertised = _parse_listen(advertise) if advertise else None
    try:
        if props.get("process.roles", "").replace(" ", "") == "controller":
            from .config import BrokerConfig
            from .controller.node import ControllerNode

            node = ControllerNode(BrokerConfig.from_sources(config_file, props), advertised=advertised)
        else:
            node = BrokerNode.from_config_file(
                config_file, props, advertised=advertised, kafka_release=release
            )
    except UnsupportedConfigError as exc:  # settings it does not implement: one line, exit 2
        from .cli_errors import UsageExit

        raise UsageExit(str(exc)) from None
    except ConfigError as exc:
        raise click.ClickException(f"{exc} (fix the property and start again)") from None
    except (ValueError, RuntimeError) as exc:
        raise click.ClickException(f"{exc}") from None
    asyncio.run(_run(node, host, port))


def _check_data_dir(data_dir: Path, node_id: str) -> None:
    """Before anything starts: a data directory this node cannot use is one line and exit 2."""
    from .cli_errors import UsageExit
    from .data_dir_checks import DataDirProblem, check_data_dir

    if not node_id.strip().lstrip("-").isdigit():
        return  # the configuration's own check names the property
    try:
        check_data_dir(data_dir, int(node_id))
    except DataDirProblem as exc:
        raise UsageExit(str(exc)) from None


def _file_sets(config_file: Path | None, name: str) -> bool:
    from .config import load_properties

    return config_file is not None and name in load_properties(config_file)


def main() -> None:
    broker()


def _list_kafka_versions(ctx: click.Context) -> None:
    """One line per release: its version, the APIs it advertises, and how many of them we serve."""
    from kconform.codecs.releases import kafka_releases, newest_covered_release

    from .forwarding import broker_handlers

    implemented = broker_handlers()
    default = newest_covered_release()
    for release in kafka_releases():
        ours = sum(1 for key in release.advertised if key in implemented)
        mark = "  (default)" if release == default else ""
        apis = len(release.advertised)
        click.echo(f"{release.version:<8} {apis:>3} APIs, {ours:>3} implemented here{mark}")
    ctx.exit(0)


async def _stop_when_orphaned(stop: asyncio.Event) -> None:
    """A broker started for a harness (KCONFORM_PARENT_PID) shuts down cleanly once that process is
    gone, so a harness that is killed leaves no broker behind."""
    parent = os.environ.get("KCONFORM_PARENT_PID")
    if not parent or not parent.isdigit():
        return
    while os.getppid() == int(parent):
        await asyncio.sleep(1.0)
    stop.set()


async def _run(node, host: str, port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    role = getattr(node, "role", "broker")
    try:
        bound_host, bound_port = await node.start(host, port)
    except OSError as exc:
        await node.stop()
        message = f"cannot listen on {host}:{port}: {exc.strerror or exc} (pick another --listen)"
        raise click.ClickException(message) from None
    except RuntimeError as exc:  # e.g. no controller to register with
        await node.stop()
        raise click.ClickException(str(exc)) from None
    for listener in getattr(getattr(node, "listeners", None), "bound", ()):  # before the line waited for
        what = f"{listener.name} ({listener.security_protocol})"
        print(f"kconform {role} {node.node_id} listener {what} on {listener.host}:{listener.port}")
    print(f"kconform {role} {node.node_id} listening on {bound_host}:{bound_port}", flush=True)
    watch = asyncio.ensure_future(_stop_when_orphaned(stop))
    try:
        await stop.wait()
    finally:
        watch.cancel()
        await node.stop()
        print(f"kconform {role} {node.node_id} stopped cleanly", file=sys.stderr, flush=True)
