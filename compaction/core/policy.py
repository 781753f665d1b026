"""Every parameter of the seed's §3 table in one frozen value, passed explicitly."""

from __future__ import annotations

from dataclasses import dataclass


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
    min_tail_messages: int = 3
    serialize_head_chars: int = 4000
    serialize_tail_chars: int = 1500
    min_summary_chars: int = 200
    # What the auxiliary model may read in one request (DESIGN 8); None: derived.
    aux_context_window: int = 128_000
    summary_input_budget: int | None = None

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

    @property
    def threshold_tokens(self) -> int:
        return self.context_window * self.threshold_percent // 100

    @property
    def tail_token_budget(self) -> int:
        return int(self.threshold_tokens * self.tail_token_budget_ratio)

    def summary_budget(self, compressed_tokens: int) -> int:
        """Seed: max(2000, min(compressed × 0.20, 12000))."""
        return max(
            self.summary_min_tokens,
            min(int(compressed_tokens * self.summary_ratio), self.summary_max_tokens),
        )

    def input_budget(self, summary_budget: int) -> int:
        """Tokens of prompt one summary request may carry, leaving room for its answer."""
        if self.summary_input_budget is not None:
            return self.summary_input_budget
        return max(1000, self.aux_context_window - summary_budget - 1000)
