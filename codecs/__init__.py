"""kconform.codecs: the Kafka wire protocol as sans-I/O Python.

Messages are generated from Apache Kafka's own definitions (``kconform.codecs.messages``); records,
compression, framing and the error table sit beside them. Nothing here does I/O."""

from ._exceptions import CodecError, DecodeError, EncodeError, UnsupportedVersionError
from .errors import Errors, KafkaError, error_for
from .framing import (
    DEFAULT_MAX_FRAME_SIZE,
    DecodedRequest,
    FrameDecoder,
    FrameTooLarge,
    decode_request,
    decode_request_header,
    decode_request_lenient,
    decode_response,
    decode_response_lenient,
    encode_request,
    encode_response,
    peek_correlation_id,
    size_prefixed,
)
from .registry import ApiSchema, api_schema, api_schemas

__all__ = [
    "ApiSchema",
    "CodecError",
    "DEFAULT_MAX_FRAME_SIZE",
    "DecodeError",
    "DecodedRequest",
    "EncodeError",
    "Errors",
    "FrameDecoder",
    "FrameTooLarge",
    "KafkaError",
    "UnsupportedVersionError",
    "api_schema",
    "api_schemas",
    "decode_request",
    "decode_request_header",
    "decode_request_lenient",
    "decode_response",
    "decode_response_lenient",
    "encode_request",
    "encode_response",
    "error_for",
    "peek_correlation_id",
    "size_prefixed",
]
