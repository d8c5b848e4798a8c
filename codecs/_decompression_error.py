"""The one error every decompressor of the codecs raises (``compression.DecompressionError``)."""

from __future__ import annotations

__all__ = ["DecompressionError"]


class DecompressionError(ValueError):
    """Compressed bytes that are malformed, truncated, or expand beyond the allowed size."""
