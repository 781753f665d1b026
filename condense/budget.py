"""The budget rules: how the compacted context is shared out under the threshold T.

Issue 13; README, "Compaction budgets". Everything is counted with the seed's estimate,
and a compacted result always ends strictly under T. Each rule is one function (or one
method of ``Room``) here, so a rule changes in one place:

1. The head and the tail stay verbatim (``span``); the tail is measured against
   ``tail_budget``. What is left, ``Room.free`` = T − 1 − head − tail − pins − framing,
   must hold the summary floor (``Room.holds_summary``); ``span.fit_tail`` has the tail
   give up its oldest tool groups until it does, or refuses (``Room.head_leaves_room``
   decides for the head alone).
2. A forced run under the threshold shares out the context it has, not the threshold
   (``sharing_basis``): the anchors' and the index's budgets are shares of that basis.
3. The summary budget is the seed's ``max(2000, min(20% of the middle, 12000))``, capped
   by what the auxiliary model can carry (``summary_cap``) and by ``free`` less the
   anchors (the user's recent words, ``min(20,000, 10% of T)``) and the mechanical index
   (``min(2,000, 5% of T)``), but never below the floor (``summary_budget``).
4. After the summary arrives, the anchors take what the summary left, up to their budget
   (``anchor_room``), then the index (``index_room``).

The summarizer reads the originals of what leaves (never the pruned placeholders; not
the pins, which stay), every earlier summary folded into the new one (or, when
re-grounding, the originals they stand for), and the orphan tool results the head and
the tail drop (``summary_sources``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from condense.anchors import section_tokens
from condense.index import IndexEntry, build_index, parse_index, render_index
from condense.language import Language
from condense.policy import CompactionPolicy
from condense.prompts import summary_body, summary_content
from condense.pruning import PRUNED_TOOL_PLACEHOLDER
from condense.serialize import serialize_pieces
from condense.stages import Layout, Measured
from condense.tokens import estimate_each, estimate_tokens
from condense.types import Message

# ── the room under the threshold ──────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class Room:
    """What the summary message needs under the threshold, whatever the span."""

    threshold: int
    framing: int  # the summary message without its text (``framing_tokens``)
    floor: int  # the smallest summary worth a model call (``summary_floor``)

    def free(self, *, head: int, tail: int, pins: int) -> int:
        """T − 1 − head − tail − pins − framing: what summary, anchors and index share."""
        return self.threshold - 1 - head - tail - pins - self.framing

    def holds_summary(self, free: int) -> bool:
        """``free`` tokens are enough for a compaction: at least the summary floor."""
        return free >= self.floor

    def head_leaves_room(self, head: int) -> bool:
        """The protected head alone still leaves the framing and the floor under T."""
        return head + self.framing + self.floor <= self.threshold - 1


def room_under_threshold(policy: CompactionPolicy, language: Language) -> Room:
    """The room rule of ``policy`` for a summary written in ``language``."""
    framing = framing_tokens(language, policy.chars_per_token, policy.recall_hint)
    return Room(policy.threshold_tokens, framing, summary_floor(policy))


def framing_tokens(language: Language, chars_per_token: int, recall_hint: bool) -> int:
    """The summary message without its text: prefix, framing, the recall hint, the
    estimate's overhead, and the one token that rounding the fixed part and the text
    separately can lose."""
    fixed = len(summary_content("", language, recall_hint=recall_hint))
    return fixed // chars_per_token + estimate_tokens(Message("user"), chars_per_token) + 1


def summary_floor(policy: CompactionPolicy) -> int:
    """A summary budget below this is not worth a model call (nor above what it carries)."""
    return min(policy.summary_floor_tokens, policy.summary_cap)


def tail_budget(policy: CompactionPolicy, current_tokens: int, force: bool) -> int:
    """The seed's tail budget; a forced (manual) compaction of a conversation far below the
    threshold keeps at most a quarter of it verbatim, so /compact always compacts."""
    if not force:
        return policy.tail_token_budget
    return min(policy.tail_token_budget, current_tokens // 4)


def sharing_basis(policy: CompactionPolicy, tokens_after_prune: int, force: bool) -> int:
    """The context the anchors' and the index's shares are taken of: the threshold, or,
    for a forced run under it, the context it has."""
    threshold = policy.threshold_tokens
    return min(threshold, tokens_after_prune) if force else threshold


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
    if (
        message.id is not None
        and message.content == PRUNED_TOOL_PLACEHOLDER
        and message.id in originals
    ):
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


def share_room(
    measured: Measured,
    layout: Layout,
    sources: Sources,
    room: Room,
    *,
    basis: int,
    language: Language,
    policy: CompactionPolicy,
) -> Shares:
    """The index's and the anchors' shares of ``basis`` (``sharing_basis``), and the
    summary's budget within the room they leave."""
    index = index_share(sources, basis=basis, language=language, policy=policy)
    anchors = anchor_share(measured, layout, basis=basis, policy=policy)
    cap = summary_cap(policy, layout, sources)
    free = layout.tail.free
    summary = summary_budget(room, free, cap=cap, anchors=anchors.budget, index=index.tokens)
    return Shares(summary, anchors, index)


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


def summary_cap(policy: CompactionPolicy, layout: Layout, sources: Sources) -> int:
    """The seed's budget for what the summary stands for (the span less its pins, the
    earlier summaries folded from outside it, the re-grounding originals), within what
    the auxiliary model can carry."""
    stands_for = layout.middle_tokens + layout.folded_outside_tokens + sources.grounding_tokens
    return min(policy.summary_budget(stands_for), policy.summary_cap)


def summary_budget(room: Room, free: int, *, cap: int, anchors: int, index: int) -> int:
    """The summary takes what anchors and index leave of ``free``, within its cap, and
    never less than the floor (the anchors and the index give way after it arrives)."""
    return min(cap, max(free - anchors - index, room.floor))


# ── after the summary arrives ─────────────────────────────────────────────────


def summary_tokens(text: str, chars_per_token: int) -> int:
    """The summary text's tokens, as the room is counted."""
    return len(text) // chars_per_token


def anchor_room(free: int, summary: int, anchor_budget: int) -> int:
    """What the anchors may take once the summary's tokens are known: what it left, up
    to their budget."""
    return min(anchor_budget, free - summary)


def index_room(free: int, summary: int, anchors: int) -> int:
    """What the index may take once the summary and the anchors are known: the rest."""
    return free - summary - anchors
