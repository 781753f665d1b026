"""Core conversations and a summarizer that fills its budget, for the compaction core's tests
(budgets, pins): what both need, kept out of either test module."""

from __future__ import annotations

from condense import Message, SummaryRequest, ToolCall


class FullBudget:
    """Answers with as much as it is allowed to write: max_output_tokens × 4 characters."""

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def __call__(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        most = min(request.max_output_tokens, request.target_tokens) * 4
        return ("## Goal\nkeep going\n" + "- a detail worth keeping\n" * 10_000)[:most]


def conversation(turns: int, *, user_chars: int = 600, tool_chars: int = 3000) -> list[Message]:
    """System, then turns of user → assistant(call) → tool → assistant, numbered from 1."""
    msgs = [Message("system", "You are a coding agent.", id=1)]
    for t in range(turns):
        base = len(msgs) + 1
        call = ToolCall(f"c{t}", "read_file", f'{{"path": "src/m{t}.py"}}')
        msgs += [
            Message("user", f"U{t} " + "u" * user_chars, id=base),
            Message("assistant", "", (call,), id=base + 1),
            Message("tool", f"T{t} " + "t" * tool_chars, tool_call_id=f"c{t}", id=base + 2),
            Message("assistant", f"A{t} " + "a" * 200, id=base + 3),
        ]
    return msgs
