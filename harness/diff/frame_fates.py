"""What became of one raw frame on one target (its *fate*), and whether two targets' fates agree.

A fate is one of:

- ``answered:<code>``: a response came; ``<code>`` is its top-level error code, or else its first error
  code in wire order (``none`` when it carries none, ``undecodable`` when it cannot be read as the
  answer to the frame's API and version);
- ``closed``: the target closed (or reset) the connection without answering;
- ``timeout``: nothing came back in time and the connection stayed open (a hang, as a client sees it);
- ``crashed``: the target was dead afterwards.

All pure: the runner (``frame_runner``) does the I/O and calls these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kconform.codecs import CodecError
from kconform.codecs.framing import decode_response_lenient

__all__ = [
    "CLOSED",
    "CRASHED",
    "FateDifference",
    "TIMEOUT",
    "UNDECODABLE",
    "answer_fate",
    "compare_fates",
    "first_error_code",
    "normalise_fate",
]

CLOSED, TIMEOUT, CRASHED = "closed", "timeout", "crashed"
UNDECODABLE = "answered:undecodable"
NO_ANSWER = "no-answer"  # closed or timeout, where Kafka's own fate is either (see normalise_fate)

# Frames whose rest never comes. Kafka's NetworkReceive.readFrom keeps reading into the buffer the
# size prefix asked for: nothing is parsed and nothing answered until the bytes arrive, and the
# connection is closed only when it has been idle for connections.max.idle.ms (Selector's idle expiry,
# 10 minutes by default). Whether a client sees "timeout" or "closed" is then a race between its own
# patience and the broker's idle setting, not a protocol behaviour: both are Kafka's fate.
_KAFKA_WAITS = frozenset({"size-over"})


@dataclass(frozen=True, slots=True)
class FateDifference:
    mutation: str
    a: str  # the fates as observed, before normalisation
    b: str

    @property
    def fates(self) -> str:
        return f"{self.a}|{self.b}"


def answer_fate(frame: bytes, answer_as: tuple[int, int] | None) -> str:
    """The fate of a response ``frame`` (without its size prefix) to a request whose answer is laid
    out as ``answer_as`` (API key, version), or ``None`` when no layout is known."""
    if answer_as is None:
        return UNDECODABLE
    try:
        _, body, _ = decode_response_lenient(frame, *answer_as)
    except (CodecError, KeyError, ValueError):
        return UNDECODABLE
    code = first_error_code(body, answer_as[1])
    return f"answered:{'none' if code is None else code}"


def first_error_code(message: Any, version: int) -> int | None:
    """The message's top-level ``error_code`` at ``version``, else its first error code in wire order
    (an int16 field named ``error_code`` or ``..._error_code``), else None."""
    fields = [f for f in type(message)._fields_ if f.present(version)]
    for f in fields:
        if f.attr == "error_code" and f.type == "int16":
            return getattr(message, f.attr)
    for f in fields:
        value = getattr(message, f.attr)
        if f.type == "int16" and f.attr.endswith("error_code"):
            return value
        if f.struct is not None and value is not None:
            for item in value if f.is_array else (value,):
                code = first_error_code(item, version)
                if code is not None:
                    return code
    return None


def normalise_fate(mutation: str, fate: str) -> str:
    """The fate as compared: ``closed`` and ``timeout`` are one fate only where Kafka itself can give
    either (a frame whose declared bytes never come, see ``_KAFKA_WAITS``). Everywhere else Kafka
    closes at once (an unparseable request: SocketServer.processCompletedReceives ->
    processChannelException) or answers, so a target that hangs instead differs, and says so."""
    if mutation in _KAFKA_WAITS and fate in (CLOSED, TIMEOUT):
        return NO_ANSWER
    return fate


def compare_fates(mutation: str, a: str, b: str) -> FateDifference | None:
    """None when the two targets' fates for a frame of ``mutation`` agree, else the difference."""
    if normalise_fate(mutation, a) == normalise_fate(mutation, b):
        return None
    return FateDifference(mutation, a, b)
