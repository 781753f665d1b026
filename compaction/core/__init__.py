"""The pure compaction core: messages + policy + a summarize callable → a result.

Standard library only (no Django, no SDK), so it is tested and benchmarked on
its own and every I/O layer wraps it.
"""

from __future__ import annotations

from compaction.core.assembly import ORPHAN_CALL_PLACEHOLDER, is_well_paired, repair_tool_pairing
from compaction.core.boundaries import Span, find_span
from compaction.core.compressor import (
    CHANGED_STATUSES,
    COMPACTED,
    NO_GAIN,
    NOTHING_TO_COMPACT,
    OVERSIZED_MESSAGE,
    PRUNED_ONLY,
    SYSTEM_PROMPT_TOO_LONG,
    UNDER_THRESHOLD,
    CompactionPlan,
    CompactionResult,
    Summarize,
    SummaryRequest,
    SummaryTooShort,
    compress,
    plan,
)
from compaction.core.policy import CompactionPolicy
from compaction.core.prompts import SUMMARY_PREFIX, detect_language, summary_body
from compaction.core.pruning import PRUNED_TOOL_PLACEHOLDER
from compaction.core.tokens import estimate_messages, estimate_tokens
from compaction.core.types import Message, ToolCall

__all__ = [
    "CHANGED_STATUSES",
    "COMPACTED",
    "NOTHING_TO_COMPACT",
    "NO_GAIN",
    "ORPHAN_CALL_PLACEHOLDER",
    "OVERSIZED_MESSAGE",
    "PRUNED_ONLY",
    "PRUNED_TOOL_PLACEHOLDER",
    "SUMMARY_PREFIX",
    "SYSTEM_PROMPT_TOO_LONG",
    "UNDER_THRESHOLD",
    "CompactionPlan",
    "CompactionPolicy",
    "CompactionResult",
    "Message",
    "Span",
    "Summarize",
    "SummaryRequest",
    "SummaryTooShort",
    "ToolCall",
    "compress",
    "detect_language",
    "estimate_messages",
    "estimate_tokens",
    "find_span",
    "is_well_paired",
    "plan",
    "repair_tool_pairing",
    "summary_body",
]
