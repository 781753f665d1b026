"""Issue 17's "done when": undo restores the exact pre-compaction compacted view, plus the
messages stored since — a hypothesis property over random chats (with tool calls and
pruned outputs), pins, compactions (automatic, manual, ``upTo``) and undos."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.models import ChatSession, Message
from agents.selectors import llm_history_load
from agents.services import messages_bulk_append
from compaction.controls import message_pin
from compaction.request import CompactionRequest
from compaction.run import compact
from compaction.undo import UndoRefused, compaction_undo
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.summaries import SUMMARY

pytestmark = pytest.mark.django_db

WORDS = ["parser", "src/app.py", "修复", "ticket-4711", "https://example.com/x", "日志", "42"]

View = list[tuple[int, str, str]]


def _view(session: ChatSession) -> View:
    """The compacted view the model gets: ids, roles and contents as shown."""
    return [
        (m.pk, m.role, "[pruned]" if m.pruned_at else m.content)
        for m in llm_history_load(session=session)
    ]


def _rows(draw_words: list[str], start: int, with_tool: bool) -> list[dict]:
    text = " ".join(draw_words) + " " + "细节 " * 60
    rows: list[dict] = [
        {"role": "user", "content": f"#{start} {text}"},
        {"role": "assistant", "content": f"#{start} answer {text}"},
    ]
    if with_tool:
        call = f"call_{start}"
        rows[1]["tool_calls"] = [
            {"id": call, "name": "read_file", "arguments": json.dumps({"path": "src/app.py"})}
        ]
        rows.append({"role": "tool", "content": "output " * 80, "tool_call_id": call})
        rows.append({"role": "assistant", "content": f"#{start} done"})
    return rows


@dataclass
class Applied:
    record_id: int
    before: View
    later: list[int] = field(default_factory=list)


append = st.tuples(
    st.just("append"), st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), st.booleans()
)
pin = st.tuples(st.just("pin"), st.integers(min_value=0, max_value=10_000))
compact_action = st.tuples(
    st.just("compact"),
    st.sampled_from(["manual", "auto"]),
    st.one_of(st.none(), st.integers(min_value=0, max_value=10_000)),
)
undo = st.tuples(st.just("undo"))
actions = st.lists(
    st.one_of(append, pin, compact_action, compact_action, undo, undo), min_size=3, max_size=14
)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(start=st.integers(min_value=3, max_value=9), steps=actions)
def test_undo_restores_the_view_before_the_compaction(llm_server, start, steps) -> None:
    llm_server.responder = lambda body, wire: Reply(text=SUMMARY)
    channel = make_channel(
        base_url=llm_server.openai_base_url, context_window=6000, is_auxiliary=True
    )
    agent = make_agent(model_channel=channel, auxiliary_model_channel=channel)
    session = make_session(owner=make_user(), agent=agent)
    counter = 0
    for i in range(start):
        messages_bulk_append(session=session, rows=_rows(WORDS[i % 3 :], counter, i % 3 == 0))
        counter += 1
    applied: list[Applied] = []
    for step in steps:
        kind = step[0]
        if kind == "append":
            rows = _rows(list(step[1]), counter, bool(step[2]))
            counter += 1
            stored = messages_bulk_append(session=session, rows=rows)
            for entry in applied:
                entry.later.extend(m.pk for m in stored)
        elif kind == "pin":
            # a pin of a pruned output gives it its text back: a change of its own
            visible = [m for m in llm_history_load(session=session) if m.pruned_at is None]
            message_pin(session=session, message_id=visible[step[1] % len(visible)].pk, pinned=True)
        elif kind == "compact":
            before = _view(session)
            visible = llm_history_load(session=session)
            up_to = visible[step[2] % len(visible)].pk if step[2] is not None else None
            pinned = [(m.pk, m.content) for m in visible if m.pinned]
            outcome = compact(CompactionRequest(str(session.pk), reason=step[1], up_to=up_to))
            if outcome.status != "done":
                assert _view(session) == before  # nothing changed
                continue
            assert outcome.record_id is not None
            after = {(pk, content) for pk, _role, content in _view(session)}
            assert set(pinned) <= after, "a pinned message was summarized away"
            applied.append(Applied(outcome.record_id, before))
        else:
            if not applied:
                with pytest.raises(UndoRefused):
                    compaction_undo(session=session)
                continue
            if len(applied) > 1:
                with pytest.raises(UndoRefused) as refused:
                    compaction_undo(session=session, record_id=applied[0].record_id)
                assert refused.value.reason == "not_latest"
            entry = applied.pop()
            compaction_undo(session=session, record_id=entry.record_id)
            later = {m.pk: m for m in Message.objects.filter(pk__in=entry.later)}
            expected = [
                *entry.before,
                *((pk, later[pk].role, later[pk].content) for pk in entry.later),
            ]
            assert _view(session) == expected
