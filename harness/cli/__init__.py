"""The ``kconform`` command: the click group, with one module here per command family. The modules are
imported whole (``codecs.codecs``), so no command takes the place of its module as an attribute of this
package."""

from __future__ import annotations

import click

from ..bench.commands import bench
from . import (
    broker,
    campaign,
    capture,
    chaos,
    cluster,
    codecs,
    conform,
    diff,
    diff_acls,
    diff_frames,
    report,
    toxiproxy,
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kconform")
def cli() -> None:
    """kconform: Kafka protocol conformance and chaos testing."""


cli.add_command(codecs.codecs)
cli.add_command(bench)
cli.add_command(broker.broker)
cli.add_command(cluster.cluster)
cli.add_command(diff.diff)
cli.add_command(diff.repro)
cli.add_command(diff_acls.diff_acls)
cli.add_command(diff_frames.diff_frames)
cli.add_command(toxiproxy.toxiproxy)
cli.add_command(chaos.chaos)
cli.add_command(conform.conform)
cli.add_command(capture.capture)
cli.add_command(capture.dissect)
cli.add_command(campaign.campaign)
cli.add_command(report.report)


def main() -> None:
    cli()
