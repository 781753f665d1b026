"""The seed's parameter table in one frozen value, passed explicitly.

Besides the seed's figures, the policy says how the compacted context is shared
out under the threshold (issue 13): head and tail verbatim, then the summary, the
user's own recent words kept verbatim ("anchors") and a mechanical index of what the
summarized tool calls touched. Every share is derived from the window, so a small
window gets small shares instead of a summary budget larger than the room.

Issue 25: the shares are taken of a *target* below the threshold (``target_percent`` of
it, 60 by default), where the compacted view should land, so the next turns have room
before the threshold comes round again; and a compaction must save ``min_gain_percent``
of the context, or it is not worth a model call.
"""

from __future__ import annotations

from dataclasses import dataclass

# The newest messages a compaction always keeps verbatim; the automatic trigger waits for
# more history than the head and this many (``compaction.trigger``).
MIN_TAIL_MESSAGES = 3


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    context_window: int
    threshold_percent: int = 70
    protect_first_n: int = 3
    tail_token_budget_ratio: float = 0.20
    summary_min_tokens: int = 2000
    summary_max_tokens: int = 12000
    summary_ratio: float = 0.20
    chars_per_token: int = 4
    prune_min_chars: int = 200
    min_tail_messages: int = MIN_TAIL_MESSAGES
    serialize_head_chars: int = 4000
    serialize_tail_chars: int = 1500
    # Issue 25: the short-summary floor, in tokens (conservative: a CJK character is one),
    # or a tenth of what is summarized when that is less.
    min_summary_tokens: int = 32
    # What the auxiliary model may read in one request (DESIGN 8); None: derived.
    aux_context_window: int = 128_000
    summary_input_budget: int | None = None
    # Issue 13: a summary budget below this is not worth a model call.
    summary_floor_tokens: int = 256
    # Issue 13: recent user messages kept verbatim: min(max, ratio × threshold) tokens.
    user_anchor_ratio: float = 0.10
    user_anchor_max_tokens: int = 20_000
    # Issue 13: the mechanical index: min(max, ratio × threshold) tokens; none under min.
    index_ratio: float = 0.05
    index_max_tokens: int = 2_000
    index_min_tokens: int = 48
    # Issue 13: chunks summarized concurrently when a middle needs this many requests.
    summary_concurrency: int = 4
    # end the summary with a line naming the recall tools (the agent has them)
    recall_hint: bool = False
    parallel_min_chunks: int = 3
    # Issue 25: where the compacted view lands, as a percent of the threshold (the agent's
    # ``compaction_target_percent``, 20–90); the summary, anchors, index and tail are sized
    # from it.
    target_percent: int = 60
    # Issue 25: a compaction that cannot save this share of the context sends no request.
    min_gain_percent: int = 20
    # Issue 25: pins must leave a summary at least this share of the target (or what the
    # seed's formula gives what it stands for, when that is less).
    useful_summary_ratio: float = 0.25
    # Issue 25: re-grounding reads every original again; it runs only when that takes at
    # most this many requests of the auxiliary model at hand.
    reground_max_requests: int = 16

    def __post_init__(self) -> None:
        if self.context_window <= 0:
            raise ValueError("context_window must be a positive number of tokens")
        if not 1 <= self.threshold_percent <= 100:
            raise ValueError("threshold_percent must be between 1 and 100")
        if self.protect_first_n < 0:
            raise ValueError("protect_first_n must not be negative")
        if not 0 < self.tail_token_budget_ratio <= 1:
            raise ValueError("tail_token_budget_ratio must be in (0, 1]")
        if self.summary_min_tokens > self.summary_max_tokens:
            raise ValueError("summary_min_tokens must not exceed summary_max_tokens")
        if self.chars_per_token <= 0:
            raise ValueError("chars_per_token must be positive")
        if self.min_tail_messages < 1:
            raise ValueError("min_tail_messages must be at least 1")
        if self.summary_concurrency < 1:
            raise ValueError("summary_concurrency must be at least 1")
        if self.parallel_min_chunks < 2:
            raise ValueError("parallel_min_chunks must be at least 2")
        if not 0 <= self.user_anchor_ratio <= 1 or not 0 <= self.index_ratio <= 1:
            raise ValueError("user_anchor_ratio and index_ratio must be in [0, 1]")
        if not 1 <= self.target_percent <= 100:
            raise ValueError("target_percent must be between 1 and 100")
        if not 0 <= self.min_gain_percent < 100:
            raise ValueError("min_gain_percent must be in [0, 100)")

    @property
    def threshold_tokens(self) -> int:
        return self.context_window * self.threshold_percent // 100

    @property
    def tail_token_budget(self) -> int:
        """The seed's tail budget (a share of the threshold): what pruning counts as recent."""
        return int(self.threshold_tokens * self.tail_token_budget_ratio)

    def target_for(self, basis: int) -> int:
        """Where a view of ``basis`` tokens should land (``basis``: the threshold, or what a
        forced run under it has)."""
        return basis * self.target_percent // 100

    @property
    def target_tokens(self) -> int:
        """Where an automatic compaction's view should land."""
        return self.target_for(self.threshold_tokens)

    def tail_budget_for(self, target: int) -> int:
        """The verbatim tail's budget: the seed's share, of the target."""
        return int(target * self.tail_token_budget_ratio)

    @property
    def user_anchor_budget(self) -> int:
        """Tokens of recent user messages an automatic compaction keeps verbatim (Codex
        keeps 20k; here a tenth of the target, at most 20k, so a small window is not filled
        with old words)."""
        return self.user_anchor_budget_for(self.target_tokens)

    def user_anchor_budget_for(self, context_tokens: int) -> int:
        return min(self.user_anchor_max_tokens, int(context_tokens * self.user_anchor_ratio))

    @property
    def index_budget(self) -> int:
        """Tokens of an automatic compaction's mechanical index (a twentieth of the target,
        at most 2,000); 0 when the window is too small for a useful one."""
        return self.index_budget_for(self.target_tokens)

    def index_budget_for(self, context_tokens: int) -> int:
        budget = min(self.index_max_tokens, int(context_tokens * self.index_ratio))
        return budget if budget >= self.index_min_tokens else 0

    def summary_budget(self, compressed_tokens: int) -> int:
        """Seed: max(2000, min(compressed × 0.20, 12000)) — before it is fitted to the room."""
        return max(
            self.summary_min_tokens,
            min(int(compressed_tokens * self.summary_ratio), self.summary_max_tokens),
        )

    @property
    def summary_cap(self) -> int:
        """The largest summary the auxiliary model can carry: an update request holds the
        previous summary and some turns, and must leave room for the answer."""
        if self.summary_input_budget is not None:
            return max(1, self.summary_input_budget // 2)
        return max(1, (self.aux_context_window - 1000) // 3)

    def input_budget(self, summary_budget: int) -> int:
        """Tokens of prompt one summary request may carry, leaving room for its answer."""
        if self.summary_input_budget is not None:
            return self.summary_input_budget
        return max(1000, self.aux_context_window - summary_budget - 1000)
