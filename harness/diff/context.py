"""What a differential case knows while it runs (``Context``): the names of its topics, groups and
transactional ids, the ids and state each target gave out, which topics it created, which an earlier
write left different on the two targets; and the parts of a request's shape that follow from it (an
unknown topic, a partition out of range, an offset past the log end)."""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from kconform.codecs.constants import ZERO_UUID

__all__ = [
    "AFTER_A_CRASH",
    "AFTER_A_DIFFERING_WRITE",
    "AFTER_ANOTHER_MEMBERS_DIFFERING_STEP",
    "Context",
    "epoch_shape",
    "has_members",
    "log_end_appended",
    "log_end_shape",
    "offset_shape",
    "topic_shape",
]

AFTER_A_DIFFERING_WRITE = "after a differing write"
# A target that crashed earlier in the case came back empty: what it answers after is the aftermath.
AFTER_A_CRASH = "after a crash"
# Another member's join, sync or leave was taken by one target only: the group's members differ.
AFTER_ANOTHER_MEMBERS_DIFFERING_STEP = "after another member's differing step"


@dataclass(frozen=True)
class Context:
    prefix: str
    ids: dict = field(default_factory=dict, compare=False)  # (side, topic name) -> that side's id
    # topic index -> its partition count (None: the broker's default), for topics this case created
    created: dict = field(default_factory=dict, compare=False)
    # what each side gave out, by (side, what, index...): member ids, generations, producer ids, sequences
    state: dict = field(default_factory=dict, compare=False)
    # topic indexes an earlier write of the case changed on one side only (the two answered it with
    # different errors or fates): what the targets hold there differs from then on
    diverged: set = field(default_factory=set, compare=False)
    # (group index, member index) of classic members whose join, sync or leave the two targets took
    # differently: the group's members differ from then on
    diverged_members: set = field(default_factory=set, compare=False)
    # (index, operation) of every step sent so far, in order
    sent: list = field(default_factory=list, compare=False)
    # the sides ("a", "b") that crashed on an earlier step of the case and came back empty
    crashed: set = field(default_factory=set, compare=False)
    # topic indexes a step asked a broker to create on the fly (Metadata v0-3 naming them)
    auto_created: set = field(default_factory=set, compare=False)

    def topic(self, index: int) -> str:
        return f"{self.prefix}-t{index}"

    def topic_id(self, side: str, index: int) -> UUID:
        """The id side ``a`` or ``b`` gave topic ``index`` (the zero id where it has none)."""
        return self.ids.get((side, self.topic(index)), ZERO_UUID)

    def group(self, index: int) -> str:
        return f"{self.prefix}-g{index}"

    def transactional_id(self, index: int) -> str:
        return f"{self.prefix}-x{index}"


def topic_shape(ctx: Context, topic: int, partition: int | None = None) -> list[str]:
    if topic not in ctx.created:
        return ["auto-created topic"] if topic in ctx.auto_created else ["unknown topic"]
    count = ctx.created[topic]
    if partition is None or count is None:
        return []
    if partition < 0:
        return ["negative partition"]
    return [] if partition < count else ["partition out of range"]


def has_members(ctx: Context, group: int) -> bool:
    """Whether a member of the case has joined ``group`` on side a and not left it (classic members
    once a join gave a generation, KIP-848 members once a heartbeat took them in)."""
    joined = ("a", "generation", group) in ctx.state
    return any(
        (key[:3] == ("a", "member", group) and joined and value) or key[:3] == ("a", "member848", group)
        for key, value in ctx.state.items()
    )


def log_end_appended(side: str, ctx: Context, topic: int, partition: int, answer, records: int) -> None:
    """After a produce side a answered: where its log of the partition ends now (base offset plus the
    records written), so a later fetch can say whether it asks past the end."""
    if side != "a":
        return
    for entry in answer.responses:
        for response in entry.partition_responses:
            if response.index == partition and response.error_code == 0 and response.base_offset >= 0:
                ctx.state[("a", "log end", topic, partition)] = response.base_offset + records


def log_end_shape(ctx: Context, topic: int, partition: int, offset: int) -> list[str]:
    """ "past the log end" for an offset beyond the end of a partition of a topic the case created, as
    far as side a's answers tell (nothing once a write went unanswered or a marker may have gone in)."""
    if topic not in ctx.created or ctx.state.get(("a", "log ends unknown")) or offset < 0:
        return []
    end = ctx.state.get(("a", "log end", topic, partition), 0)
    return [] if end is None or offset <= end else ["past the log end"]


def offset_shape(offset: int) -> list[str]:
    return ["offset -1"] if offset == -1 else ["huge offset"] if offset >= 1 << 31 else []


def epoch_shape(epoch: int) -> list[str]:
    return [] if epoch == -1 else [f"leader epoch {epoch}"]
