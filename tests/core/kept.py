"""Invariants every compaction result keeps, checked against its inputs.

(Was ``tests/support/compaction_checks.py``; issue 25 gives a pruned output a stub that
names its tool and message, so the pruned copy is checked against that.)"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from condense import (
    COMPACTED,
    CompactionPolicy,
    CompactionResult,
    Message,
    is_pruned,
)
from condense.boundaries import find_compress_start


def check_kept(
    result: CompactionResult, inputs: Sequence[Message], policy: CompactionPolicy
) -> None:
    """Every input message is kept (verbatim or, in a pruned_only outcome, as a reported
    pruned copy) or reported removed, never both, never silently dropped; kept ones keep
    their order."""
    by_id = {m.id: m for m in inputs}
    position = {m.id: i for i, m in enumerate(inputs)}
    out_ids = [m.id for m in result.messages if m.id is not None]
    assert len(out_ids) == len(set(out_ids)), "a message appears twice"
    kept, summarized, pruned = set(out_ids), set(result.summarized_ids), set(result.pruned_ids)
    assert len(summarized) == len(result.summarized_ids)
    assert len(pruned) == len(result.pruned_ids)
    assert kept | summarized == set(by_id), "an input message was silently dropped"
    assert not kept & summarized, "an id is both kept and summarized"
    assert pruned <= kept, "a pruned id is not in the result"
    if result.status == COMPACTED:
        assert not pruned, "a compacted context keeps what it keeps verbatim"
    # order kept; phase 4 may put a group's results in the order of its calls
    group, anchor = {}, -1
    for i, m in enumerate(inputs):
        anchor = anchor if m.role == "tool" else i
        group[m.id] = anchor
    assert [group[i] for i in out_ids] == sorted(group[i] for i in out_ids)
    start = find_compress_start(inputs, policy.protect_first_n)
    for out in result.messages:
        if out.id is None:
            continue
        original = by_id[out.id]
        if out.id in pruned:
            assert original.role == "tool" and len(original.content) > policy.prune_min_chars
            assert is_pruned(out.content) and "\n" not in out.content, "a one-line stub"
            assert f"#{original.id}" in out.content, "the stub names its message"
            assert out == replace(original, content=out.content)
            assert position[out.id] >= start, "the protected head was pruned"
        else:
            assert out == original, f"message {out.id} changed without being reported"
