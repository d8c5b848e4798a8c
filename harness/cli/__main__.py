"""``python -m kconform.harness.cli``: the ``kconform`` command without its console script."""

from . import main

main()
