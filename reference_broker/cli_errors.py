"""The command lines' exit-2 error: a misuse (a bad option, a data directory this node cannot use) is
one ``Error: ...`` line and exit status 2, as click reports a usage error, never a traceback."""

from __future__ import annotations

import click

__all__ = ["UsageExit"]


class UsageExit(click.ClickException):
    """Printed as one ``Error: <message>`` line; exit status 2."""

    exit_code = 2
