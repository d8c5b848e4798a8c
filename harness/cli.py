"""The ``kconform`` command."""

from __future__ import annotations

import click

from .bench.commands import bench
from .broker_commands import broker
from .campaign_commands import campaign
from .capture_commands import capture, dissect
from .chaos_commands import chaos
from .codecs_commands import codecs
from .diff_commands import diff, repro
from .report_commands import report
from .toxiproxy_commands import toxiproxy


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kconform")
def cli() -> None:
    """kconform: Kafka protocol conformance and chaos testing."""


cli.add_command(codecs)
cli.add_command(bench)
cli.add_command(broker)
cli.add_command(diff)
cli.add_command(repro)
cli.add_command(toxiproxy)
cli.add_command(chaos)
cli.add_command(capture)
cli.add_command(dissect)
cli.add_command(campaign)
cli.add_command(report)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
