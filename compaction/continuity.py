"""What a compaction never summarizes away (issue 25 item 7).

Right after the newest summary, every request carries, verbatim: the agent's todo list as
it stands (``todo_write``), and the notes the agent wrote before a compaction (carried from
summary to summary, not only to the next one). Until the agent has answered once after the
compaction, a continuation directive follows: go on with the pending work, no recap, and
never redo what the summary marks as done — finished work replayed after a compaction is the
most reported compaction failure elsewhere (codex #38931, #42695)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import condense as core
from agents.models import Message as StoredMessage
from agents.models import Role

_TODO_HEADING = {
    "zh": "[你的待办清单（todo_write），原样保留]",
    "en": "[Your todo list (todo_write), kept verbatim]",
}
_NOTES_HEADING = {
    "zh": "[压缩前你写下的笔记（NOTES.md），原样保留]",
    "en": "[Notes you wrote before a compaction (NOTES.md), kept verbatim]",
}
_DIRECTIVE = {
    "zh": (
        "[继续工作] 上文是较早对话的摘要。直接从中断处继续进行中的工作：不要复述摘要，"
        "也不要重做摘要中标为已完成的事情。"
    ),
    "en": (
        "[Continue] The above summarizes the earlier conversation. Go on with the pending "
        "work from where it stopped: do not recap the summary, and never redo what it marks "
        "as done."
    ),
}
_MARK = {"completed": "x", "in_progress": "~", "pending": " "}


def _lang(language: str) -> str:
    return "zh" if language == "zh" else "en"


def todo_lines(todos: Sequence[dict[str, Any]]) -> str:
    return "\n".join(
        f"- [{_MARK.get(str(t.get('status')), ' ')}] {t.get('content', '')}" for t in todos
    )


def continuity_message(
    *, todos: Sequence[dict[str, Any]], notes: str, language: str, answered: bool
) -> core.Message | None:
    """The block after the newest summary (None when there is nothing to carry)."""
    lang = _lang(language)
    parts = []
    if todos:
        parts.append(f"{_TODO_HEADING[lang]}\n{todo_lines(todos)}")
    if notes:
        parts.append(f"{_NOTES_HEADING[lang]}\n{notes}")
    if not answered:
        parts.append(_DIRECTIVE[lang])
    if not parts:
        return None
    return core.Message(role="user", content="\n\n".join(parts))


def newest_summary_index(stored: Sequence[StoredMessage]) -> int | None:
    for index in range(len(stored) - 1, -1, -1):
        if stored[index].is_compaction_summary:
            return index
    return None


def answered_since(stored: Sequence[StoredMessage], index: int) -> bool:
    """The agent has answered since the summary at ``index`` was written (its first turn
    after the compaction is over) — the tail kept verbatim after it is older."""
    written = stored[index].created_at
    return any(m.role == Role.ASSISTANT and m.created_at > written for m in stored[index + 1 :])
