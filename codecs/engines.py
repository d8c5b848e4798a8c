"""The codecs' other engines, for self-checks and benchmarks.

Every message class encodes and decodes with its generated straight-line code. Two more engines read
the same schema: the interpreter (an independent walk of the field schema, the oracle the generated
code is checked against) and the optional native decoder (``_speedups``; ``pure_python()`` turns it off
for a block, ``KCONFORM_PURE_CODECS=1`` for a process)."""

from ._interpreter import decode_message as interpret_decode
from ._interpreter import encode_message as interpret_encode
from ._native import AVAILABLE as NATIVE_AVAILABLE
from ._native import pure_python

__all__ = ["NATIVE_AVAILABLE", "interpret_decode", "interpret_encode", "pure_python"]
