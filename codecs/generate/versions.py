"""An inclusive range of protocol versions, as the message definitions write them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Versions", "NO_VERSIONS"]

_HIGHEST = 0x7FFF


@dataclass(frozen=True, slots=True)
class Versions:
    lowest: int
    highest: int

    @classmethod
    def parse(cls, text: str) -> Versions:
        """``"3+"``, ``"0-2"``, ``"5"`` or ``"none"``."""
        text = text.strip()
        if text == "none":
            return NO_VERSIONS
        if text.endswith("+"):
            return cls(int(text[:-1]), _HIGHEST)
        if "-" in text:
            lo, hi = text.split("-", 1)
            versions = cls(int(lo), int(hi))
        else:
            versions = cls(int(text), int(text))
        if versions.lowest < 0 or versions.lowest > versions.highest:
            raise ValueError(f"invalid version range {text!r}")
        return versions

    @property
    def empty(self) -> bool:
        return self.lowest > self.highest

    def __contains__(self, version: int) -> bool:
        return self.lowest <= version <= self.highest

    def intersect(self, other: Versions) -> Versions:
        lo, hi = max(self.lowest, other.lowest), min(self.highest, other.highest)
        return Versions(lo, hi) if lo <= hi else NO_VERSIONS

    def __iter__(self):
        return iter(range(self.lowest, self.highest + 1))

    def as_tuple(self) -> tuple[int, int]:
        return (self.lowest, self.highest)

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.highest == _HIGHEST:
            return f"{self.lowest}+"
        if self.lowest == self.highest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"


NO_VERSIONS = Versions(1, 0)
