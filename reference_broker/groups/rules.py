"""The group coordinator's rules in one table: which pure function decides each event."""

from __future__ import annotations

from ..coordinator_runtime import Effect
from . import classic_rules, kip848_effects, offset_rules
from .events import GroupContext, GroupsState

__all__ = ["RULES", "decide"]

RULES = {**classic_rules.RULES, **offset_rules.RULES, **kip848_effects.RULES}


def decide(state: GroupsState, event: object, ctx: GroupContext) -> list[Effect]:
    """Change ``state`` as ``event`` requires and return the effects, in the order they must happen."""
    rule = RULES.get(type(event))
    if rule is None:
        raise TypeError(f"the group coordinator has no rule for {type(event).__name__}")
    return rule(state, event, ctx)
