"""Committed offsets (OffsetCommit, OffsetFetch, OffsetDelete, TxnOffsetCommit)."""

from __future__ import annotations
