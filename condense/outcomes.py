"""The names of a compaction's outcomes: a plan's and a result's ``status``.

One module below ``span`` (which decides most refusals) and ``compressor`` (which decides
the rest), so both spell them the same; ``condense`` re-exports them.
"""

from __future__ import annotations

COMPACTED = "compacted"
PRUNED_ONLY = "pruned_only"
UNDER_THRESHOLD = "under_threshold"
NOTHING_TO_COMPACT = "nothing_to_compact"
OVERSIZED_MESSAGE = "oversized_message"
SYSTEM_PROMPT_TOO_LONG = "system_prompt_too_long"
NO_GAIN = "no_gain"
HEAD_TOO_LONG = "head_too_long"
TAIL_TOO_LONG = "tail_too_long"
PINS_TOO_LONG = "pins_too_long"
# issue 25: what is kept fits under the threshold, but not with the smallest summary worth
# a model call (was reported as head_too_long)
NO_ROOM_FOR_SUMMARY = "no_room_for_summary"
# issue 25: an earlier summary would be folded into less room than its own essentials
EARLIER_SUMMARY_TOO_LONG = "earlier_summary_too_long"
CHANGED_STATUSES = frozenset({COMPACTED, PRUNED_ONLY})
# history unchanged, and the user is told why (UNDER_THRESHOLD is a skip, not a failure)
FAILURE_STATUSES = frozenset(
    {
        NOTHING_TO_COMPACT,
        OVERSIZED_MESSAGE,
        SYSTEM_PROMPT_TOO_LONG,
        NO_GAIN,
        HEAD_TOO_LONG,
        TAIL_TOO_LONG,
        PINS_TOO_LONG,
        NO_ROOM_FOR_SUMMARY,
        EARLIER_SUMMARY_TOO_LONG,
    }
)
