"""Producer ids that are never handed out twice, even across crashes (Kafka's ProducerIdManager).

Ids are reserved in blocks: the end of the current block is written to disk (atomically) before any
id in it is used, so after a restart allocation resumes past every id that may have been given out."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ProducerIdAllocator"]

BLOCK_SIZE = 1000


class ProducerIdAllocator:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._next = 0
        self._block_end = 0
        if path.exists():
            try:
                self._next = self._block_end = int(path.read_text().strip())
            except ValueError as exc:
                raise RuntimeError(
                    f"{path} does not hold a producer id ({exc}); remove it only if no producer "
                    "ids were ever handed out"
                ) from exc

    def next_id(self) -> int:
        if self._next >= self._block_end:
            self._reserve(self._next + BLOCK_SIZE)
        producer_id = self._next
        self._next += 1
        return producer_id

    def _reserve(self, block_end: int) -> None:
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as fh:
            fh.write(f"{block_end}\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        self._block_end = block_end
