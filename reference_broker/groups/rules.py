"""The group coordinator's rules in one table: which pure function decides each event."""

from __future__ import annotations

from ..coordinator_runtime import Effect
from . import classic_rules, kip848_effects, mixed_rules, offset_rules
from .events import GroupContext, GroupsState

__all__ = ["RULES", "decide"]

# mixed_rules takes the classic protocol's requests first: those for consumer groups are its own, the
# rest it hands to classic_rules (Kafka's classicGroupJoin/Sync/Heartbeat/Leave dispatch on the type).
RULES = {**classic_rules.RULES, **offset_rules.RULES, **kip848_effects.RULES, **mixed_rules.RULES}


def decide(state: GroupsState, event: object, ctx: GroupContext) -> list[Effect]:
    """Change ``state`` as ``event`` requires and return the effects, in the order they must happen."""
    rule = RULES.get(type(event))
    if rule is None:
        raise TypeError(f"the group coordinator has no rule for {type(event).__name__}")
    return rule(state, event, ctx)
