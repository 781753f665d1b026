"""The values a plan's stages hand each other (``compressor.plan`` reads as their spine).

``span`` makes them (measure, prune, head, span, tail); ``budget`` reads them to share out
the room. They live below both, so that ``span`` can ask ``budget``'s rules how much room
a tail leaves while ``budget`` reads what ``span`` decided, without an import circle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from condense.boundaries import Span
from condense.outcomes import NO_GAIN, NOTHING_TO_COMPACT, PRUNED_ONLY
from condense.types import Message


@dataclass(frozen=True, slots=True)
class Measured:
    """The input, each message estimated once: every stage reuses these figures."""

    messages: tuple[Message, ...]
    estimates: list[int]
    roles: list[str]
    tokens: int


@dataclass(frozen=True, slots=True)
class Stop:
    """The outcome of a plan that ends before any summary, and why."""

    status: str
    oversized_id: int | None = None
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Pruning:
    """Phase 1: the old tool outputs their stubs replace, and what is left."""

    pinned: tuple[int, ...]  # pinned messages and their tool groups: never pruned
    indexes: tuple[int, ...]
    stub_tokens: dict[int, int]  # each pruned output's tokens as its stub
    tokens_after: int
    gains: bool  # it saves the policy's minimum gain (``min_gain_percent``)

    def or_nothing(self) -> Stop:
        """When no summary can be made: pruning, if it gains enough."""
        return Stop(PRUNED_ONLY if self.gains else NOTHING_TO_COMPACT)

    def or_no_gain(self) -> Stop:
        """When a summary cannot gain enough (decided before any request): pruning, if it
        gains enough itself, else no gain."""
        return Stop(PRUNED_ONLY if self.gains else NO_GAIN)


@dataclass(frozen=True, slots=True)
class Marks:
    """The input's marked messages: pins, and earlier summaries (folded unless pinned)."""

    pinned: tuple[int, ...]  # pinned messages and the rest of their tool groups
    summaries: list[int]
    folded: tuple[int, ...]  # the earlier summaries folded into the new one
    folding: set[int]  # the same, to look up


@dataclass(frozen=True, slots=True)
class Head:
    """The protected first messages as they stay."""

    start: int  # where the span starts
    tokens: int
    dropped: list[int]  # orphan tool results: they leave, and are summarized


@dataclass(frozen=True, slots=True)
class Tail:
    """The newest messages as they stay, the pins of the span, and the room left."""

    end: int  # where the tail starts: the span's end
    tokens: int
    dropped: list[int]  # orphan tool results: they leave, and are summarized
    pins: tuple[int, ...]  # pinned messages of the span (and their tool groups)
    pin_tokens: int  # as they stay (a call whose result never came gets a placeholder)
    free: int  # ``budget.Room.free``: the room under the threshold
    room: int  # ``budget.Room.usable``: the most summary, anchors and index may take
    goal: int  # ``budget.Room.toward_target``: what they share when the target is reached


@dataclass(frozen=True, slots=True)
class Layout:
    """What stays and what leaves, for a span that can be compacted."""

    span: Span
    head: Head
    tail: Tail
    folded: tuple[int, ...]  # earlier summaries folded into the new one
    middle: Sequence[int]  # the span less its earlier summaries and pins (a range: all of it)
    removed: tuple[int, ...]  # what leaves the context (before anchors), sorted
    middle_tokens: int  # the span less its pins
    folded_outside_tokens: int  # the folded summaries outside the span
    need: int  # the smallest summary worth its request (``budget.summary_need``)

    def leaving(self, messages: Sequence[Message]) -> list[Message]:
        """The originals that leave besides the folded summaries, in order: the head's
        orphans, the middle, the tail's orphans."""
        middle = self.middle
        if isinstance(middle, range):
            in_middle = messages[middle.start : middle.stop]
        else:
            in_middle = [messages[i] for i in middle]
        return [
            *(messages[i] for i in self.head.dropped),
            *in_middle,
            *(messages[i] for i in self.tail.dropped),
        ]
