"""Fixtures shared by the suites of ``reference_broker``: ``txlog``, a ``TxnLog`` on a fresh partition
directory (``test_txn_log_*.py``), closed after the test."""

from __future__ import annotations

import pytest

from ..support.txn_log import TxnLog


@pytest.fixture
def txlog(tmp_path):
    owner = TxnLog(tmp_path / "orders-0")
    yield owner
    if not owner.log.closed:
        owner.log.close_handlers()
