"""A principal as a broker forwards it inside an Envelope (``DefaultKafkaPrincipalBuilder`` as Kafka's
``KafkaPrincipalSerde``): a big-endian int16 version, then ``DefaultPrincipalData`` at that version
(``MessageUtil.toVersionPrefixedBytes``). The controller authorizes the forwarded request as that
principal."""

from __future__ import annotations

import struct

from kconform.codecs import DecodeError
from kconform.codecs.messages import DefaultPrincipalData

from .principals import KafkaPrincipal

__all__ = ["PrincipalDeserializationError", "deserialize", "serialize"]

_VERSION = struct.Struct(">h")
_HIGHEST = 0  # DefaultPrincipalData's only version


class PrincipalDeserializationError(ValueError):
    """Bytes that are no principal: Kafka answers the Envelope with PRINCIPAL_DESERIALIZATION_FAILURE."""


def serialize(principal: KafkaPrincipal) -> bytes:
    data = DefaultPrincipalData(type=principal.principal_type, name=principal.name)
    return _VERSION.pack(_HIGHEST) + data.encode(_HIGHEST)


def deserialize(data: bytes | memoryview) -> KafkaPrincipal:
    if len(data) < _VERSION.size:
        raise PrincipalDeserializationError("Failed to deserialize client principal from envelope")
    (version,) = _VERSION.unpack_from(data)
    if version != _HIGHEST:
        raise PrincipalDeserializationError(f"Invalid principal data version {version}")
    try:
        decoded = DefaultPrincipalData.decode(memoryview(data)[_VERSION.size :], version)
    except DecodeError as exc:
        raise PrincipalDeserializationError(
            f"Failed to deserialize client principal from envelope: {exc}"
        ) from None
    return KafkaPrincipal(decoded.type, decoded.name)
