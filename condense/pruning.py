"""Phase 1: replace old, large tool outputs with a one-line stub (no model call).

Pruning serves the main model's context only (a ``pruned_only`` outcome). The summarizer
always reads the originals, and the protected head is never pruned: its tool results
(the ones right after ``protect_first_n``) stay with their call, verbatim. Nor is a
pinned message's tool group (``pins``).

Issue 25: a pruned output is not just gone. Its stub names the tool, the message id and,
when the agent has the recall tools, how to get the original back
(``read_history_message`` / ``search_history``): the seed's placeholder, then that line.
Anything starting with the placeholder counts as pruned already (``is_pruned``), so a
stored history that carries the bare placeholder is read the same way.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from condense.boundaries import find_compress_start
from condense.pins import pinned_indexes
from condense.policy import CompactionPolicy
from condense.tokens import MESSAGE_OVERHEAD_TOKENS
from condense.types import Message

PRUNED_TOOL_PLACEHOLDER = "[旧工具输出已清除以节省上下文]"


def is_pruned(content: str) -> bool:
    """A tool output already replaced by its placeholder (bare, or a stub)."""
    return content.startswith(PRUNED_TOOL_PLACEHOLDER)


def pruned_stub(tool_name: str | None, message_id: int | None, *, recall_hint: bool) -> str:
    """The one line that stands for a pruned output: the placeholder, the tool, the
    message id, and — when the agent has the recall tools — where the original is."""
    words = [PRUNED_TOOL_PLACEHOLDER]
    if tool_name:
        words.append(tool_name)
    if message_id is not None:
        words.append(f"#{message_id}")
    stub = " ".join(words)
    if recall_hint and message_id is not None:
        stub += (
            f' — the original: read_history_message {{"id": {message_id}}}; '
            "search_history finds it by its words"
        )
    return stub


def tool_name_of(messages: Sequence[Message], index: int) -> str | None:
    """The name of the call a tool result answers (its group's assistant message)."""
    call_id = messages[index].tool_call_id
    at = index - 1
    while at >= 0 and messages[at].role == "tool":
        at -= 1
    if at < 0:
        return None
    return next((c.name for c in messages[at].tool_calls if c.id == call_id), None)


def stub_for(messages: Sequence[Message], index: int, policy: CompactionPolicy) -> str:
    """The stub of ``messages[index]``, a tool output phase 1 prunes."""
    return pruned_stub(
        tool_name_of(messages, index), messages[index].id, recall_hint=policy.recall_hint
    )


def stub_tokens(stub: str, policy: CompactionPolicy) -> int:
    """A pruned output's estimate: its stub's (tool outputs carry no tool calls)."""
    return len(stub) // policy.chars_per_token + MESSAGE_OVERHEAD_TOKENS


def pruned_copy(m: Message, content: str = PRUNED_TOOL_PLACEHOLDER) -> Message:
    """``m`` with ``content`` (its stub) for content: the pruned view of a tool output."""
    # dataclasses.replace re-validates every field; on 100k messages it was a third of phase 1
    return Message(
        m.role,
        content,
        m.tool_calls,
        m.tool_call_id,
        m.id,
        m.is_summary,
        m.metadata,
        m.pinned,
    )


def pruned_view(
    messages: Sequence[Message], pruned: Sequence[int], policy: CompactionPolicy
) -> tuple[Message, ...]:
    """``messages`` with the ``pruned`` indexes' contents replaced by their stubs."""
    out = list(messages)
    for i in pruned:
        out[i] = pruned_copy(out[i], stub_for(messages, i, policy))
    return tuple(out)


def prune_indexes(
    messages: Sequence[Message],
    estimates: Sequence[int],
    policy: CompactionPolicy,
    *,
    pinned: Collection[int] | None = None,
) -> list[int]:
    """Indexes phase 1 prunes: walking back from the end, once the running total passes
    the tail budget, every older tool message over ``prune_min_chars`` after the head,
    except pinned ones (``pinned``: ``pinned_indexes(messages)``, when the caller has it).
    Messages already pruned (``is_pruned``) are left alone (idempotent)."""
    budget = policy.tail_token_budget
    running = 0
    boundary = -1  # messages at index <= boundary are "older than the tail budget"
    for i in range(len(messages) - 1, -1, -1):
        running += estimates[i]
        if running > budget:
            boundary = i - 1
            break
    start = find_compress_start(messages, policy.protect_first_n)
    if boundary < start:
        return []
    least = policy.prune_min_chars
    pruned = [
        i
        for i, m in enumerate(messages[start : boundary + 1], start)
        if m.role == "tool" and len(m.content) > least and not is_pruned(m.content)
    ]
    if pinned is None:
        pinned = pinned_indexes(messages)
    if pinned:
        keep = set(pinned)
        pruned = [i for i in pruned if i not in keep]
    return pruned


def prune_old_tool_outputs(
    messages: Sequence[Message], estimates: Sequence[int], policy: CompactionPolicy
) -> tuple[list[Message], list[int], list[int]]:
    """Phase 1 (``prune_indexes``): the new messages, their estimates, the pruned indexes."""
    out = list(messages)
    new_estimates = list(estimates)
    pruned = prune_indexes(messages, estimates, policy)
    for i in pruned:
        stub = stub_for(messages, i, policy)
        out[i] = pruned_copy(out[i], stub)
        new_estimates[i] = stub_tokens(stub, policy)
    return out, new_estimates, pruned
