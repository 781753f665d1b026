"""What the service hands the core (issue 13): the summarizer reads pruned outputs in full,
summaries record their chain depth, a deep chain is rebuilt from the kept originals, and the
core's new refusals reach the user as reasons."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from agents.models import ChatSession, Message, Role
from agents.services import messages_bulk_append
from compaction.request import CompactionRequest
from compaction.run import compact
from condense.prompts import RECALL_HINT
from scripted_llm import Reply
from tests.support.history import session_to_compact
from tests.support.summaries import KEY_VALUE_SUMMARY, is_summary_request

pytestmark = pytest.mark.django_db


def _summary_prompts(server) -> str:
    return "\n".join(
        json.dumps(r.body, ensure_ascii=False)
        for r in server.requests
        if is_summary_request(r.body)
    )


def _more_turns(session: ChatSession, n: int, tag: str) -> None:
    rows = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"{tag} turn {i} " + "y" * 300,
        }
        for i in range(n)
    ]
    messages_bulk_append(session=session, rows=rows)


def test_the_summarizer_reads_a_pruned_tool_output_in_full(llm_server) -> None:
    llm_server.responder = lambda body, wire: Reply(text=KEY_VALUE_SUMMARY)
    session = session_to_compact(llm_server, n=4)
    call = {"id": "call_1", "name": "read_file", "arguments": '{"path": "big.log"}'}
    messages_bulk_append(
        session=session,
        rows=[
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {
                "role": "tool",
                "content": "log line\n" * 20 + "PLANTED-FACT-7731 is the failing value\n",
                "tool_call_id": "call_1",
            },
        ],
    )
    tool = Message.objects.get(session=session, role=Role.TOOL)
    Message.objects.filter(pk=tool.pk).update(pruned_at=timezone.now())  # an earlier phase 1
    _more_turns(session, 30, "later")

    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))

    assert outcome.status == "done", outcome
    assert "PLANTED-FACT-7731" in _summary_prompts(llm_server)


def test_a_deep_chain_of_summaries_is_rebuilt_from_the_originals(llm_server) -> None:
    llm_server.responder = lambda body, wire: Reply(text=KEY_VALUE_SUMMARY)
    session = session_to_compact(llm_server, n=4)
    _more_turns(session, 2, "PLANTED-ROUND-ONE-5150")
    _more_turns(session, 30, "round1")
    depths = []
    for round_ in range(2, 6):
        outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
        assert outcome.status == "done", outcome
        summary = Message.objects.get(pk=outcome.summary_message_id)
        depths.append((summary.metadata["chainDepth"], summary.metadata["regrounded"]))
        if round_ == 4:
            llm_server.reset()
            llm_server.responder = lambda body, wire: Reply(text=KEY_VALUE_SUMMARY)
        _more_turns(session, 30, f"round{round_}")
    # the fixed summary never repeats the planted fact: only the originals carry it
    assert depths[:3] == [(1, False), (2, False), (3, False)]
    assert depths[3] == (1, True)
    assert "PLANTED-ROUND-ONE-5150" in _summary_prompts(llm_server)


def test_an_agent_can_always_rebuild_from_the_originals(llm_server) -> None:
    llm_server.responder = lambda body, wire: Reply(text=KEY_VALUE_SUMMARY)
    session = session_to_compact(llm_server, n=4)
    session.agent.compaction_reground = True
    session.agent.save()
    _more_turns(session, 2, "PLANTED-EARLY-9090")
    _more_turns(session, 30, "round1")
    assert compact(CompactionRequest(str(session.pk), reason="manual")).status == "done"
    _more_turns(session, 30, "round2")
    llm_server.reset()
    llm_server.responder = lambda body, wire: Reply(text=KEY_VALUE_SUMMARY)

    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))

    assert outcome.status == "done", outcome
    assert Message.objects.get(pk=outcome.summary_message_id).metadata["regrounded"] is True
    assert "PLANTED-EARLY-9090" in _summary_prompts(llm_server)


def test_a_summary_cut_off_twice_is_a_clear_failure(llm_server) -> None:
    llm_server.responder = lambda body, wire: Reply(text=KEY_VALUE_SUMMARY, stop="length")
    session = session_to_compact(llm_server, n=40)
    before = Message.objects.filter(session=session).count()

    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))

    assert (outcome.status, outcome.reason) == ("failed", "summary_cut_off")
    assert "截断" in outcome.error and "cut off" in outcome.error
    assert len([r for r in llm_server.requests if is_summary_request(r.body)]) >= 2
    assert Message.objects.filter(session=session).count() == before + 1  # the failure bubble


@pytest.mark.parametrize("enabled", [True, False])
def test_the_summary_names_the_recall_tools_only_when_the_agent_has_them(
    llm_server, enabled: bool
) -> None:
    llm_server.responder = lambda body, wire: Reply(text=KEY_VALUE_SUMMARY)
    session = session_to_compact(llm_server, n=40)
    session.agent.search_history_enabled = enabled
    session.agent.save()

    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))

    content = Message.objects.get(pk=outcome.summary_message_id).content
    assert content.endswith(RECALL_HINT["en"]) is enabled  # the conversation is English
    assert ("search_history" in content) is enabled
