"""Transactions: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, Describe/ListTransactions."""

from __future__ import annotations
