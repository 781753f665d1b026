"""When to rebuild a summary from the kept originals instead of from the previous summary.

Each compaction after the first rewrites the previous summary with the new turns: a
summary of a summary of a summary. Whatever one rewrite drops is gone for every later
one, although NetaClaw keeps every original. Re-grounding sends the originals the
earlier summaries stand for (chunked, like any long middle) instead of those summaries,
so the new summary is again one step away from what was said.

The rule: the *chain depth* of a summary is 1 when it was built from originals (a first
compaction, or a re-grounded one) and one more than the depth of the summary it updated
otherwise. A compaction re-grounds when the deepest summary it folds has depth
``REGROUND_DEPTH`` (3) or more — so a chain is at most three rewrites deep — unless the
originals are too many to read at a reasonable cost (``REGROUND_MAX_TOKENS``, about 16
requests to a 128k auxiliary model, 4 rounds at 4 at a time); then the chain goes on and
is re-grounded by a later compaction only if the agent asks for it.

Issue 25: a compaction that only pruned (or found no gain) resets the depth to 1: the
summary it left in place counts as freshly grounded, so a chain whose summary could not
be improved does not re-ground — reading every original again — on every later
``/compact``. The core itself re-grounds only when that takes at most
``policy.reground_max_requests`` requests, and (``reground_only_if_squeezed``) when an
earlier summary would otherwise be folded into less room than its own essentials.
"""

from __future__ import annotations

from condense.outcomes import COMPACTED

REGROUND_DEPTH = 3
REGROUND_MAX_TOKENS = 2_000_000


def should_reground(
    chain_depth: int,
    *,
    originals_tokens: int = 0,
    max_originals_tokens: int = REGROUND_MAX_TOKENS,
    always: bool = False,
) -> bool:
    """Whether the next compaction should be built from originals (see the module's rule).

    ``chain_depth``: the deepest chain depth among the summaries it will fold (0: none);
    ``originals_tokens``: the token estimate of the originals those summaries stand for;
    ``always``: the agent's option to re-ground every compaction (the cap still applies).
    """
    if chain_depth <= 0 or originals_tokens > max_originals_tokens:
        return False
    return always or chain_depth >= REGROUND_DEPTH


def next_chain_depth(folded_depth: int, *, regrounded: bool, status: str = COMPACTED) -> int:
    """The chain depth after a compaction (``folded_depth``: as above): the depth of the
    summary it writes, or — when it wrote none (``status`` other than compacted) — the
    depth the visible summary counts as from then on: reset to 1 (0: there is none)."""
    if status != COMPACTED:
        return min(folded_depth, 1)
    return 1 if regrounded or folded_depth <= 0 else folded_depth + 1
