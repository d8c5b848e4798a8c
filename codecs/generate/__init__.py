"""The message-definition code generator: ``python -m kconform.codecs.generate`` (see ``command``)."""

from .command import main, render

__all__ = ["main", "render"]
