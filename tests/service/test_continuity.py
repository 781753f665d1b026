"""Continuity after a compaction (issue 25 item 7): the todo list and the agent's notes come
back verbatim right after the newest summary in every request, the first turn after a
compaction is told to go on without recap or redoing what is done, and notes are carried
across every later compaction — never summarized away."""

from __future__ import annotations

import pytest

from agents.models import ChatSession, Message
from agents.services import message_append, messages_bulk_append, session_todos_save
from compaction.context import llm_context_for_session
from compaction.request import CompactionRequest
from compaction.run import compact
from scripted_llm import Reply
from tests.support.history import session_to_compact
from tests.support.summaries import KEY_VALUE_SUMMARY

pytestmark = pytest.mark.django_db

TODOS = [
    {"content": "修复 src/parser.py 的空行 bug", "status": "completed"},
    {"content": "给 parse_line 补测试", "status": "in_progress"},
    {"content": "更新 CHANGELOG", "status": "pending"},
]


def _after_summary(session: ChatSession) -> str:
    context = llm_context_for_session(ChatSession.objects.get(pk=session.pk))
    index = next(i for i, m in enumerate(context) if m.is_summary)
    return context[index + 1].content


def test_the_todo_list_and_a_continuation_directive_follow_the_summary(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    session_todos_save(session=session, todos=TODOS)
    assert compact(CompactionRequest(str(session.pk))).status == "done"

    block = _after_summary(session)
    assert "- [x] 修复 src/parser.py 的空行 bug" in block
    assert "- [~] 给 parse_line 补测试" in block and "- [ ] 更新 CHANGELOG" in block
    assert "never redo what it marks as done" in block or "不要重做" in block

    message_append(session=session, role="assistant", content="继续补测试。")
    later = _after_summary(session)
    assert "更新 CHANGELOG" in later, "every later request carries the list"
    assert "never redo" not in later and "不要重做" not in later, "the directive is the first's"


def test_notes_are_carried_across_every_later_compaction(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY), Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    assert compact(CompactionRequest(str(session.pk))).status == "done"
    first = Message.objects.get(session=session, is_compaction_summary=True, compacted_at=None)
    first.metadata = {**first.metadata, "notes": "目标：修好解析器；值 MAX_LINE=4096"}
    first.save(update_fields=["metadata"])
    rows = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"later {i} " + "y" * 300}
        for i in range(30)
    ]
    messages_bulk_append(session=session, rows=rows)
    assert compact(CompactionRequest(str(session.pk))).status == "done"
    second = Message.objects.get(session=session, is_compaction_summary=True, compacted_at=None)
    assert second.pk != first.pk
    assert second.metadata["notes"] == "目标：修好解析器；值 MAX_LINE=4096"
    assert "MAX_LINE=4096" in _after_summary(session)
