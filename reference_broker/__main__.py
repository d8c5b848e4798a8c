"""``python -m kconform.reference_broker``: one broker node, the options as ``kconform broker``'s."""

from .command_line import main

main()
