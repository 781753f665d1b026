"""The pure compaction core: messages + policy + a summarize callable → a result.

Standard library only (no Django, no SDK), so it is tested and benchmarked on
its own and every I/O layer wraps it.
"""

from __future__ import annotations

from condense.assembly import ORPHAN_CALL_PLACEHOLDER, is_well_paired, repair_tool_pairing
from condense.boundaries import Span, find_span
from condense.checks import (
    NOT_A_SUMMARY_REASONS,
    REJECTION_REASONS,
    SUMMARY_CHAT_REPLY,
    SUMMARY_CUT_OFF,
    SUMMARY_EMPTY,
    SUMMARY_LONGER_THAN_INPUT,
    SUMMARY_META_ANSWER,
    SUMMARY_MISSING_SECTIONS,
    SUMMARY_OVER_BUDGET,
    SUMMARY_REASONING_ONLY,
    SUMMARY_REFUSED,
    SUMMARY_TOO_SHORT,
    SUMMARY_TOOL_CALL_ONLY,
    SummaryRejected,
    SummaryReply,
    SummaryTooShort,
)
from condense.compressor import (
    CHANGED_STATUSES,
    COMPACTED,
    EARLIER_SUMMARY_TOO_LONG,
    FAILURE_STATUSES,
    HEAD_TOO_LONG,
    NO_GAIN,
    NO_ROOM_FOR_SUMMARY,
    NOTHING_TO_COMPACT,
    OVERSIZED_MESSAGE,
    PINS_TOO_LONG,
    PRUNED_ONLY,
    SYSTEM_PROMPT_TOO_LONG,
    TAIL_TOO_LONG,
    UNDER_THRESHOLD,
    CompactionPlan,
    CompactionResult,
    compress,
    plan,
)
from condense.dropped import DroppedFact, context_text, dropped_facts
from condense.index import IndexEntry
from condense.language import detect_language, language_name
from condense.pins import pinned_indexes
from condense.policy import CompactionPolicy
from condense.prompts import SUMMARY_PREFIX, summary_body, with_summary_body
from condense.pruning import PRUNED_TOOL_PLACEHOLDER, is_pruned, pruned_stub
from condense.regrounding import (
    REGROUND_DEPTH,
    REGROUND_MAX_TOKENS,
    next_chain_depth,
    should_reground,
)
from condense.summarizing import Summarize, SummaryRequest
from condense.tokens import estimate_each, estimate_messages, estimate_tokens
from condense.types import (
    ImagePart,
    Message,
    ToolCall,
    core_role,
    tool_calls_from_json,
    tool_calls_to_json,
)

__all__ = [
    "CHANGED_STATUSES",
    "COMPACTED",
    "EARLIER_SUMMARY_TOO_LONG",
    "FAILURE_STATUSES",
    "HEAD_TOO_LONG",
    "NOTHING_TO_COMPACT",
    "NOT_A_SUMMARY_REASONS",
    "NO_GAIN",
    "NO_ROOM_FOR_SUMMARY",
    "ORPHAN_CALL_PLACEHOLDER",
    "OVERSIZED_MESSAGE",
    "PINS_TOO_LONG",
    "PRUNED_ONLY",
    "PRUNED_TOOL_PLACEHOLDER",
    "REGROUND_DEPTH",
    "REGROUND_MAX_TOKENS",
    "REJECTION_REASONS",
    "SUMMARY_CHAT_REPLY",
    "SUMMARY_CUT_OFF",
    "SUMMARY_EMPTY",
    "SUMMARY_LONGER_THAN_INPUT",
    "SUMMARY_META_ANSWER",
    "SUMMARY_MISSING_SECTIONS",
    "SUMMARY_OVER_BUDGET",
    "SUMMARY_PREFIX",
    "SUMMARY_REASONING_ONLY",
    "SUMMARY_REFUSED",
    "SUMMARY_TOOL_CALL_ONLY",
    "SUMMARY_TOO_SHORT",
    "SYSTEM_PROMPT_TOO_LONG",
    "TAIL_TOO_LONG",
    "UNDER_THRESHOLD",
    "CompactionPlan",
    "CompactionPolicy",
    "CompactionResult",
    "DroppedFact",
    "ImagePart",
    "IndexEntry",
    "Message",
    "Span",
    "Summarize",
    "SummaryRejected",
    "SummaryReply",
    "SummaryRequest",
    "SummaryTooShort",
    "ToolCall",
    "compress",
    "context_text",
    "core_role",
    "detect_language",
    "dropped_facts",
    "estimate_each",
    "estimate_messages",
    "estimate_tokens",
    "find_span",
    "is_pruned",
    "is_well_paired",
    "language_name",
    "next_chain_depth",
    "pinned_indexes",
    "plan",
    "pruned_stub",
    "repair_tool_pairing",
    "should_reground",
    "summary_body",
    "tool_calls_from_json",
    "tool_calls_to_json",
    "with_summary_body",
]
