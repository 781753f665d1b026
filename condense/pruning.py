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


_POINTER = (
    ' — the original: read_history_message {{"id": {id}}}; search_history finds it by its words'
)
_POINTER_CHARS = len(_POINTER.format(id=""))  # without the id's digits


def pruned_stub(tool_name: str | None, message_id: int | None, *, recall_hint: bool) -> str:
    """The one line that stands for a pruned output: the placeholder, the tool, the
    message id, and — when the agent has the recall tools — where the original is."""
    stub = PRUNED_TOOL_PLACEHOLDER
    if tool_name:
        stub += f" {tool_name}"
    if message_id is not None:
        stub += f" #{message_id}"
        if recall_hint:
            stub += _POINTER.format(id=message_id)
    return stub


def stub_length(tool_name: str | None, message_id: int | None, *, recall_hint: bool) -> int:
    """``len(pruned_stub(...))`` without building it: phase 1 counts every pruned output
    of a long history, and builds the stubs only for a pruned-only outcome."""
    length = len(PRUNED_TOOL_PLACEHOLDER)
    if tool_name:
        length += 1 + len(tool_name)
    if message_id is not None:
        digits = len(str(message_id))
        length += 2 + digits
        if recall_hint:
            length += _POINTER_CHARS + digits
    return length


def tool_name_of(messages: Sequence[Message], index: int) -> str | None:
    """The name of the call a tool result answers (its group's assistant message)."""
    call_id = messages[index].tool_call_id
    at = index - 1
    while at >= 0 and messages[at].role == "tool":
        at -= 1
    if at >= 0:
        for call in messages[at].tool_calls:
            if call.id == call_id:
                return call.name
    return None


def stub_for(messages: Sequence[Message], index: int, policy: CompactionPolicy) -> str:
    """The stub of ``messages[index]``, a tool output phase 1 prunes."""
    return pruned_stub(
        tool_name_of(messages, index), messages[index].id, recall_hint=policy.recall_hint
    )


def stub_tokens(
    messages: Sequence[Message], indexes: Sequence[int], policy: CompactionPolicy
) -> dict[int, int]:
    """Each pruned output's estimate as its stub (tool outputs carry no tool calls):
    ``stub_length`` and ``tool_name_of`` in one loop, a long history having tens of
    thousands of them."""
    cpt, recall = policy.chars_per_token, policy.recall_hint
    base, pointer = len(PRUNED_TOOL_PLACEHOLDER), _POINTER_CHARS
    out: dict[int, int] = {}
    for i in indexes:
        message = messages[i]
        length = base
        at = i - 1
        while at >= 0 and messages[at].role == "tool":
            at -= 1
        if at >= 0:
            call_id = message.tool_call_id
            for call in messages[at].tool_calls:
                if call.id == call_id:
                    length += 1 + len(call.name) if call.name else 0
                    break
        if message.id is not None:
            digits = len(str(message.id))
            length += 2 + digits + (pointer + digits if recall else 0)
        out[i] = length // cpt + MESSAGE_OVERHEAD_TOKENS
    return out


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
    for i, tokens in stub_tokens(messages, pruned, policy).items():
        out[i] = pruned_copy(out[i], stub_for(messages, i, policy))
        new_estimates[i] = tokens
    return out, new_estimates, pruned
