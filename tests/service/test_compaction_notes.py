"""Notes before compaction (issue 18 item 5): one bounded step of the agent's model writes
notes before an automatic compaction; they go to NOTES.md and come back verbatim after the
summary in every later context."""

from __future__ import annotations

from typing import Any

import pytest

from agents.meter import meter_read
from agents.models import ChatSession
from agents.tools.workspace import session_workspace_root
from compaction import background
from compaction.context import llm_context_for_session
from compaction.notes import NOTES_FILE, NOTES_MAX_TOKENS
from compaction.request import CompactionRequest
from compaction.run import compact
from scripted_llm import Fail, Reply
from tests.factories import make_channel
from tests.support.history import session_to_compact
from tests.support.summaries import KEY_VALUE_SUMMARY, is_summary_request

pytestmark = pytest.mark.django_db(transaction=True)

NOTES = "- deploy key is K-77-ALPHA\n- next: migrate src/parser.py"


def _is_notes_request(body: dict[str, Any]) -> bool:
    last = body["messages"][-1]["content"]
    return "durable notes" in str(last) or "需要长期保留的笔记" in str(last)


def _model(notes_reply: Any = None):
    asked: dict[str, list[dict[str, Any]]] = {"notes": [], "summary": [], "chat": []}

    def respond(body: dict[str, Any], wire: str) -> Any:
        if is_summary_request(body):
            asked["summary"].append(body)
            return Reply(text=KEY_VALUE_SUMMARY)
        if _is_notes_request(body):
            asked["notes"].append(body)
            return notes_reply or Reply(text=NOTES)
        asked["chat"].append(body)
        return Reply(text="ok")

    return respond, asked


def _session(server, *, notes: bool = True) -> ChatSession:
    session = session_to_compact(server)
    agent = session.agent
    aux = agent.model_channel
    agent.model_channel = make_channel(
        base_url=aux.base_url, model="main-model", context_window=4_000
    )
    agent.auxiliary_model_channel = aux
    agent.compaction_notes = notes
    agent.save()
    session = ChatSession.objects.select_related("agent__model_channel").get(pk=session.pk)
    assert meter_read(session=session).over_threshold
    return session


def test_notes_are_written_before_an_automatic_compaction_and_kept_verbatim(llm_server) -> None:
    llm_server.responder, asked = _model()
    session = _session(llm_server)

    assert compact(CompactionRequest(str(session.pk), reason="auto")).status == "done"

    [request] = asked["notes"]
    assert "tools" not in request and request["max_tokens"] == NOTES_MAX_TOKENS
    assert "turn 0 about src/parser.py" in str(request["messages"])  # it saw the context
    saved = (session_workspace_root(session.pk) / NOTES_FILE).read_text()
    assert saved.strip() == NOTES
    context = llm_context_for_session(session)
    at = next(i for i, m in enumerate(context) if m.is_summary)
    assert NOTES in context[at + 1].content  # verbatim, right after the summary
    assert context[at + 1].content.startswith("[Notes you wrote before a compaction")


def test_notes_are_off_by_default_and_manual_compaction_never_asks(llm_server) -> None:
    llm_server.responder, asked = _model()
    session = _session(llm_server, notes=False)
    assert compact(CompactionRequest(str(session.pk), reason="auto")).status == "done"
    session = _session(llm_server, notes=True)
    assert compact(CompactionRequest(str(session.pk), reason="manual")).status == "done"
    assert asked["notes"] == []
    assert not any(m.is_summary and False for m in llm_context_for_session(session))


def test_a_failed_notes_step_does_not_stop_the_compaction(llm_server) -> None:
    llm_server.responder, asked = _model(Fail(status=500, should_retry=False))
    session = _session(llm_server)

    assert compact(CompactionRequest(str(session.pk), reason="auto")).status == "done"

    assert len(asked["notes"]) == 1
    assert not (session_workspace_root(session.pk) / NOTES_FILE).exists()
    assert all(NOTES not in m.content for m in llm_context_for_session(session))


def test_notes_written_with_a_prepared_summary_come_with_it(
    llm_server, background_compaction
) -> None:
    llm_server.responder, asked = _model()
    session = _session(llm_server)
    assert background.start(str(session.pk))
    background.wait(str(session.pk), timeout=30)
    assert len(asked["notes"]) == 1 and len(asked["summary"]) == 1

    assert compact(CompactionRequest(str(session.pk), reason="auto")).status == "done"

    assert len(asked["notes"]) == 1 and len(asked["summary"]) == 1  # nothing asked again
    assert any(NOTES in m.content for m in llm_context_for_session(session))
