"""WriteTxnMarkers (key 27)."""

from __future__ import annotations
