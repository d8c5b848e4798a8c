"""``kconform broker``: the reference broker's own command line (``python -m kconform.reference_broker``),
under the ``kconform`` group; its options and behaviour live in the broker, not here."""

from kconform.reference_broker.command_line import broker

__all__ = ["broker"]
