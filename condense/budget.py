"""The budget rules: how the compacted context is shared out under the threshold T, toward
a target G below it.

Issues 13 and 25; README, "How a compaction keeps what matters". Everything is counted
with the seed's estimate. Each rule is one function (or one method of ``Room``) here, so
a rule changes in one place:

1. Where the view lands (``room_for``): at or under the target G, ``target_percent`` of the
   basis — the threshold, or, for a forced run under it, the context it has after pruning
   (``sharing_basis``) — so the next turns have room before T comes round again. Whatever
   happens it ends under the *ceiling*: under T, under what pruning alone leaves, and
   ``min_gain_percent`` under what it had (``Room.ceiling``); a compaction that cannot gain
   that much is decided (pruned only, or no gain) before any request.
2. The head and the tail stay verbatim (``span``); the tail is measured against
   ``tail_budget`` (the seed's 20%, of G). The summary needs ``summary_need`` tokens: the
   floor (or half of what the span holds, when less), or the essentials of the earlier
   summaries it folds when that is more (an earlier summary is never folded into less room
   than what its model wrote). ``span.fit_tail`` has the tail give up its oldest groups
   until the room under G holds that (``Room.toward_target``), within the seed's minimum
   tail; past it only while the room under T does not (``Room.free``, the seed's rule,
   down to its last group). The room under the ceiling (``Room.usable``) must hold it, or
   no request is sent: no gain when the room under T would, else the reason that applies.
3. The anchors (the user's recent words, ``min(20,000, 10% of G)``) and the mechanical index
   (``min(2,000, 5% of G)``) are shares of G.
4. The summary budget is the seed's ``max(2000, min(20% of what it stands for, 12000))``, at
   least the need, capped by what the auxiliary model can carry (``summary_cap``) and by
   what the anchors and the index leave of the room it shares with them — the room under G
   when G is reached, else under the ceiling — but never below the need
   (``summary_budget``).
5. Pins must leave a useful summary (``useful_summary``), else ``pins_too_long``.
6. After the summary arrives, the anchors take what it left of that room, up to their
   budget (``anchor_room``), then the index (``index_room``).

The summarizer reads the originals of what leaves (never the pruned placeholders; not
the pins, which stay), every earlier summary folded into the new one (or, when
re-grounding, the originals they stand for), and the orphan tool results the head and
the tail drop (``summary_sources``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from condense.anchors import CUT_LABELS, section_tokens
from condense.index import HEADERS, IndexEntry, build_index, parse_index, render_index
from condense.language import Language
from condense.policy import CompactionPolicy
from condense.prompts import summary_body, summary_content
from condense.pruning import is_pruned
from condense.serialize import serialize_pieces
from condense.stages import Layout, Marks, Measured, Pruning
from condense.tokens import conservative_tokens, estimate_each, estimate_tokens
from condense.types import Message

# ── the room under the threshold ──────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class Room:
    """What the summary message needs, and where the view may land, whatever the span."""

    threshold: int
    target: int  # G: the view should land at or under it
    ceiling: int  # the most a compacted view may hold (under T, pruning and the gain)
    framing: int  # the summary message without its text (``framing_tokens``)
    floor: int  # the smallest summary worth a model call (``summary_floor``)

    def free(self, *, head: int, tail: int, pins: int) -> int:
        """T − 1 − head − tail − pins − framing: the room under the threshold, which decides
        why a compaction fails when no summary fits."""
        return self.threshold - 1 - head - tail - pins - self.framing

    def usable(self, *, head: int, tail: int, pins: int) -> int:
        """The room under the ceiling: the most summary, anchors and index may take."""
        return self.ceiling - head - tail - pins - self.framing

    def toward_target(self, *, head: int, tail: int, pins: int) -> int:
        """The room under the target: what summary, anchors and index share when G is
        reached."""
        return min(self.target, self.ceiling) - head - tail - pins - self.framing

    def head_fits(self, head: int) -> bool:
        """The protected head alone, with the summary message's framing, is under T."""
        return head + self.framing <= self.threshold - 1


def room_for(
    policy: CompactionPolicy,
    language: Language,
    measured: Measured,
    pruning: Pruning,
    *,
    force: bool,
) -> Room:
    """The room rule of ``policy`` for a summary written in ``language``: the target of the
    sharing basis, and the ceiling (under T, under pruning alone, and the minimum gain)."""
    framing = framing_tokens(language, policy.chars_per_token, policy.recall_hint)
    threshold = policy.threshold_tokens
    before = measured.tokens
    gain = max(1, math.ceil(before * policy.min_gain_percent / 100))
    ceiling = min(threshold - 1, pruning.tokens_after - 1, before - gain)
    target = policy.target_for(sharing_basis(policy, pruning.tokens_after, force))
    return Room(threshold, target, ceiling, framing, summary_floor(policy))


def framing_tokens(language: Language, chars_per_token: int, recall_hint: bool) -> int:
    """The summary message without its text: prefix, framing, the recall hint, the
    estimate's overhead, and the one token that rounding the fixed part and the text
    separately can lose."""
    fixed = len(summary_content("", language, recall_hint=recall_hint))
    return fixed // chars_per_token + estimate_tokens(Message("user"), chars_per_token) + 1


def summary_floor(policy: CompactionPolicy) -> int:
    """A summary budget below this is not worth a model call (nor above what it carries)."""
    return min(policy.summary_floor_tokens, policy.summary_cap)


def tail_budget(policy: CompactionPolicy, room: Room) -> int:
    """The verbatim tail's budget: the seed's share (20%), of the target."""
    return policy.tail_budget_for(room.target)


def sharing_basis(policy: CompactionPolicy, tokens_after_prune: int, force: bool) -> int:
    """The context the target is taken of: the threshold, or, for a forced run under it,
    the context it has."""
    threshold = policy.threshold_tokens
    return min(threshold, tokens_after_prune) if force else threshold


# ── what the summary needs ────────────────────────────────────────────────────


def summary_need(
    measured: Measured,
    marks: Marks,
    room: Room,
    *,
    previous: str | None,
    grounded: bool,
    middle: int,
) -> int:
    """The smallest summary worth its request: the floor (or half of what the smallest
    span holds, ``middle`` tokens, when that is less: a summary never needs more), or the
    essentials of the earlier summaries it folds (``essential_tokens``) when that is more.
    A re-grounded summary is built from the originals instead, so only the floor applies."""
    floor = min(room.floor, max(1, middle // 2))
    if grounded or (previous is None and not marks.folded):
        return floor
    text = previous
    if text is None:
        text = "\n\n".join(summary_body(measured.messages[i].content) for i in marks.folded)
    return max(floor, essential_tokens(text))


def essential_tokens(text: str) -> int:
    """An earlier summary's essentials: the tokens of what its model wrote (conservative,
    a CJK character a token, as output budgets are counted), without the sections code
    adds after it (the index is rebuilt from it; a cut anchor is read again)."""
    end = len(text)
    for marker in (*HEADERS, *CUT_LABELS):
        at = text.find(marker)
        if at != -1:
            end = min(end, at)
    return conservative_tokens(text[:end].strip())


def useful_summary(policy: CompactionPolicy, room: Room, need: int, stands_for: int) -> int:
    """What pins must leave a summary: ``useful_summary_ratio`` of the target, or less when
    the seed's formula gives what it stands for less (or the auxiliary model carries less),
    and never less than the need."""
    share = int(room.target * policy.useful_summary_ratio)
    return max(need, min(share, policy.summary_budget(stands_for), policy.summary_cap))


# ── what the summarizer reads ─────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class Sources:
    """What the summarizer reads, oldest first, serialized for its requests."""

    messages: Sequence[Message]  # the re-grounding originals, then what leaves the context
    contents: Sequence[str]  # their original contents (never a pruned placeholder)
    pieces: Sequence[str]  # each message serialized, as the requests carry it
    costs: Sequence[int]  # each piece's conservative tokens + 1
    folded: Sequence[Message]  # the earlier summaries folded into the new one
    previous: str | None  # their text, which the new summary updates (None: re-grounded)
    regrounded: bool  # read from the originals the earlier summaries stand for instead
    grounding_tokens: int  # the estimate of those originals


def summary_sources(
    measured: Measured,
    layout: Layout,
    *,
    previous_summary: str | None,
    regrounding_originals: Sequence[Message] | None,
    original_contents: Mapping[int, str] | None,
    policy: CompactionPolicy,
) -> Sources:
    """The originals that leave, and the earlier summaries folded; re-grounding (its
    originals given, and a summary to fold) reads the originals the summaries stand for
    instead of their text."""
    folded = [measured.messages[i] for i in layout.folded]
    regrounded = bool(regrounding_originals) and bool(folded)
    grounding = tuple(regrounding_originals or ()) if regrounded else ()
    leaving = layout.leaving(measured.messages)
    messages = [*grounding, *leaving] if grounding else leaving
    contents = _original_contents(messages, original_contents)
    pieces, costs = serialize_pieces(
        messages,
        contents,
        head=policy.serialize_head_chars,
        tail=policy.serialize_tail_chars,
        chars_per_token=policy.chars_per_token,
    )
    previous = _previous_summary(previous_summary, folded, regrounded)
    grounding_tokens = sum(estimate_each(grounding, policy.chars_per_token))
    return Sources(
        messages, contents, pieces, costs, folded, previous, regrounded, grounding_tokens
    )


def _previous_summary(given: str | None, folded: Sequence[Message], regrounded: bool) -> str | None:
    """The summary the new one updates: none when re-grounding, else the caller's, else
    the folded summaries' bodies."""
    if regrounded:
        return None
    if given is not None:
        return given
    if folded:
        return "\n\n".join(summary_body(m.content) for m in folded)
    return None


def _original_contents(
    messages: Sequence[Message], originals: Mapping[int, str] | None
) -> list[str]:
    """Each message's content, or its stored original when it arrives pruned."""
    if not originals:
        return [m.content for m in messages]
    return [_content_of(m, originals) for m in messages]


def _content_of(message: Message, originals: Mapping[int, str]) -> str:
    if message.id is not None and is_pruned(message.content) and message.id in originals:
        return originals[message.id]
    return message.content


# ── sharing the room ──────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class IndexShare:
    """The mechanical index of the sources, rendered within its budget."""

    entries: tuple[IndexEntry, ...]
    text: str
    tokens: int  # what ``text`` adds to the summary message


@dataclass(frozen=True, slots=True)
class AnchorShare:
    """The user messages that may stay verbatim, and the tokens they may take."""

    candidates: tuple[int, ...]  # user messages of the middle, in order
    budget: int


@dataclass(frozen=True, slots=True)
class Shares:
    """The room shared out before the summary is written."""

    summary: int  # the summary's budget: max output tokens of its final request
    anchors: AnchorShare
    index: IndexShare
    room: int  # what summary, anchors and index share: under G when reached, else the ceiling
    reaches_target: bool  # the room under G holds the summary's need


def share_room(
    measured: Measured,
    layout: Layout,
    sources: Sources,
    room: Room,
    *,
    language: Language,
    policy: CompactionPolicy,
) -> Shares:
    """The index's and the anchors' shares of the target, and the summary's budget within
    the room they leave."""
    index = index_share(sources, basis=room.target, language=language, policy=policy)
    anchors = anchor_share(measured, layout, basis=room.target, policy=policy)
    cap = summary_cap(policy, layout, sources)
    tail = layout.tail
    reaches = tail.goal >= layout.need
    shared = tail.goal if reaches else tail.room
    summary = summary_budget(
        shared, cap=cap, need=layout.need, anchors=anchors.budget, index=index.tokens
    )
    return Shares(summary, anchors, index, shared, reaches)


def index_share(
    sources: Sources, *, basis: int, language: Language, policy: CompactionPolicy
) -> IndexShare:
    """``min(2,000, 5% of the basis)`` tokens of index: the sources' entries first, then
    those of the folded summaries' own indexes."""
    cpt = policy.chars_per_token
    budget = policy.index_budget_for(basis)
    earlier = [entry for m in sources.folded for entry in parse_index(m.content)]
    entries = build_index(
        sources.messages,
        contents=sources.contents,
        max_chars=budget * cpt,
        earlier=earlier,
        head_chars=policy.serialize_head_chars,
        tail_chars=policy.serialize_tail_chars,
    )
    text = render_index(entries, language, max(0, index_chars(budget, cpt)))
    return IndexShare(entries, text, section_tokens(text, cpt) if text else 0)


def index_chars(tokens: int, chars_per_token: int) -> int:
    """The characters an index section of ``tokens`` tokens may have ("\\n\\n" before it)."""
    return (tokens - 1) * chars_per_token - 2


def anchor_share(
    measured: Measured, layout: Layout, *, basis: int, policy: CompactionPolicy
) -> AnchorShare:
    """``min(20,000, 10% of the basis)`` tokens, never more than the candidates hold."""
    candidates = anchor_candidates(measured.roles, layout.middle, len(layout.removed))
    held = sum(map(measured.estimates.__getitem__, candidates))
    return AnchorShare(candidates, min(policy.user_anchor_budget_for(basis), held))


def anchor_candidates(
    roles: Sequence[str], middle: Sequence[int], removed_count: int
) -> tuple[int, ...]:
    """The user messages of the middle (``middle``: indexes, a range when contiguous); not
    the oldest one when they are all that leaves (keeping them all would compact nothing)."""
    if isinstance(middle, range):
        first = middle.start
        users = [i for i, r in enumerate(roles[first : middle.stop], first) if r == "user"]
    else:
        users = [i for i in middle if roles[i] == "user"]
    candidates = tuple(users)
    if len(candidates) == removed_count:
        return candidates[1:]
    return candidates


def stands_for(layout: Layout, sources: Sources) -> int:
    """The tokens a summary stands for: the span less its pins, the earlier summaries folded
    from outside it, the re-grounding originals."""
    return layout.middle_tokens + layout.folded_outside_tokens + sources.grounding_tokens


def summary_cap(policy: CompactionPolicy, layout: Layout, sources: Sources) -> int:
    """The seed's budget for what the summary stands for, or its need when that is more,
    within what the auxiliary model can carry."""
    seed = policy.summary_budget(stands_for(layout, sources))
    return min(max(seed, layout.need), policy.summary_cap)


def summary_budget(shared: int, *, cap: int, need: int, anchors: int, index: int) -> int:
    """The summary takes what anchors and index leave of ``shared``, within its cap, and
    never less than its need (the anchors and the index give way after it arrives)."""
    return min(cap, max(shared - anchors - index, need))


# ── after the summary arrives ─────────────────────────────────────────────────


def summary_tokens(text: str, chars_per_token: int) -> int:
    """The summary text's tokens, as the room is counted."""
    return len(text) // chars_per_token


def anchor_room(shared: int, summary: int, anchor_budget: int) -> int:
    """What the anchors may take once the summary's tokens are known: what it left of the
    room they share, up to their budget."""
    return max(0, min(anchor_budget, shared - summary))


def index_room(shared: int, summary: int, anchors: int) -> int:
    """What the index may take once the summary and the anchors are known: the rest."""
    return max(0, shared - summary - anchors)
