"""The codec's exception types: one for bad bytes, one for values that cannot be written."""

from __future__ import annotations

__all__ = ["CodecError", "DecodeError", "EncodeError", "UnsupportedVersionError"]


class CodecError(Exception):
    """Base of every error the codecs raise."""


class DecodeError(CodecError):
    """Bytes that are not a valid encoding of ``message`` at ``version``.

    ``field`` is the dotted path of the field being read (``responses[2].partitions[0].records``) and
    ``offset`` the byte offset into the decoded buffer where it started; either is ``None`` when unknown.
    """

    def __init__(
        self,
        message: str,
        version: int | None,
        reason: str,
        *,
        field: str | None = None,
        offset: int | None = None,
    ) -> None:
        self.message = message
        self.version = version
        self.field = field
        self.offset = offset
        self.reason = reason
        where = f"{message} v{version}" if version is not None else message
        if field:
            where += f" field {field}"
        if offset is not None:
            where += f" at byte {offset}"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self):  # keep pickling (pytest-xdist, multiprocessing) working
        return (_rebuild_decode_error, (self.message, self.version, self.reason, self.field, self.offset))


def _rebuild_decode_error(message, version, reason, field, offset):
    return DecodeError(message, version, reason, field=field, offset=offset)


class EncodeError(CodecError, ValueError):
    """A value that cannot be written at the requested version (out of range, null where not
    nullable, or a non-default field the version does not carry)."""


class UnsupportedVersionError(CodecError, ValueError):
    """A version outside the message's valid versions."""
