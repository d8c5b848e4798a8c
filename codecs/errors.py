"""Kafka's error codes: code, name, retriable, and whether the client should refresh metadata."""

from __future__ import annotations

from dataclasses import dataclass

from .messages._error_codes import ERROR_CODES

__all__ = ["KafkaError", "error_for", "error_by_name", "all_errors", "Errors"]


@dataclass(frozen=True, slots=True)
class KafkaError:
    code: int
    name: str
    exception: str | None
    retriable: bool
    invalid_metadata: bool

    def __bool__(self) -> bool:  # NONE is falsy, so `if error:` reads naturally
        return self.code != 0


_BY_CODE = {row[0]: KafkaError(*row) for row in ERROR_CODES}
_BY_NAME = {e.name: e for e in _BY_CODE.values()}


def error_for(code: int) -> KafkaError:
    """The error with this code, or an ``UNKNOWN(code)`` entry for codes the table does not know."""
    found = _BY_CODE.get(code)
    if found is None:
        return KafkaError(code, f"UNKNOWN({code})", None, False, False)
    return found


def error_by_name(name: str) -> KafkaError:
    return _BY_NAME[name]


def all_errors() -> list[KafkaError]:
    return list(_BY_CODE.values())


class _ErrorCodes:
    """``Errors.NOT_LEADER_OR_FOLLOWER`` -> 6: codes by name, for readable handler code."""

    def __getattr__(self, name: str) -> int:
        try:
            return _BY_NAME[name].code
        except KeyError:
            raise AttributeError(f"no Kafka error named {name}") from None

    def __dir__(self):
        return list(_BY_NAME)


Errors = _ErrorCodes()
