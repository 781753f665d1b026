"""CONTRACT §7 over REST: compaction records, undo, upTo, pins, summary edits and the
agent's compaction controls."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import Agent, ChatSession, CompactionRecord, Message
from agents.selectors import llm_history_load
from agents.services import messages_bulk_append
from compaction.request import CompactionRequest
from compaction.run import compact
from scripted_llm import Fail, Reply
from tests.factories import make_agent
from tests.support.api_clients import token_client
from tests.support.history import fill_history, session_to_compact
from tests.support.summaries import KEY_VALUE_SUMMARY

pytestmark = pytest.mark.django_db(transaction=True)

RECORD_KEYS = {
    "id",
    "summaryMessageId",
    "trigger",
    "status",
    "reason",
    "tokensBefore",
    "tokensAfter",
    "removedCount",
    "auxiliaryChannel",
    "auxiliaryModel",
    "auxInputTokens",
    "auxOutputTokens",
    "requestCount",
    "durationMs",
    "startedAt",
}


@pytest.fixture
def compacted(llm_server):
    """A session of 40 turns, compacted once by hand; its owner's API client."""
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY, input_tokens=900, output_tokens=90))
    session = session_to_compact(llm_server)
    outcome = compact(CompactionRequest(str(session.pk), reason="manual"))
    assert outcome.status == "done"
    return session, outcome, token_client(session.owner)


def test_the_records_are_listed_newest_first_as_the_contract_says(llm_server, compacted) -> None:
    session, outcome, api = compacted
    fill_history(session, messages=20, filler=150)  # new turns: something to compact again
    llm_server.enqueue(Fail(status=500, should_retry=False))
    compact(CompactionRequest(str(session.pk), reason="manual", trigger="command"))
    response = api.get(f"/api/sessions/{session.pk}/compactions/")
    assert response.status_code == 200
    rows = response.json()
    assert [set(r) for r in rows] == [RECORD_KEYS, RECORD_KEYS]
    failed, done = rows
    assert (failed["trigger"], failed["status"], failed["reason"]) == (
        "command",
        "failed",
        "upstream_error",
    )
    assert done == {
        **done,
        "id": outcome.record_id,
        "summaryMessageId": outcome.summary_message_id,
        "trigger": "manual",
        "status": "done",
        "reason": None,
        "tokensBefore": outcome.tokens_before,
        "tokensAfter": outcome.tokens_after,
        "removedCount": outcome.removed_count,
        "auxiliaryModel": "aux-model",
        "auxInputTokens": 900,
        "auxOutputTokens": 90,
        "requestCount": 1,
    }
    detail = api.get(f"/api/sessions/{session.pk}/compactions/{outcome.record_id}/").json()
    assert {"instructions", "upTo", "undoneAt", "edits", "dropped"} <= set(detail)
    assert isinstance(detail["dropped"], list)


def test_another_users_records_are_not_found(compacted, bob_api) -> None:
    session, outcome, _api = compacted
    assert bob_api.get(f"/api/sessions/{session.pk}/compactions/").status_code == 404
    url = f"/api/sessions/{session.pk}/compactions/{outcome.record_id}/undo/"
    assert bob_api.post(url).status_code == 404
    assert CompactionRecord.objects.get(pk=outcome.record_id).status == "done"


def test_undo_over_rest(llm_server, compacted) -> None:
    session, first, api = compacted
    url = f"/api/sessions/{session.pk}/compactions/{{}}/undo/"
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    messages_bulk_append(session=session, rows=[{"role": "user", "content": "more " * 200}] * 10)
    second = compact(CompactionRequest(str(session.pk), reason="manual"))
    assert second.status == "done"
    refused = api.post(url.format(first.record_id))
    assert refused.status_code == 409
    assert refused.json() == {
        "error": "Only the latest compaction that is still in effect can be undone",
        "reason": "not_latest",
    }
    assert api.post(url.format(second.record_id)).status_code == 200
    response = api.post(url.format(first.record_id))
    assert response.status_code == 200
    assert response.json() == {"restoredCount": first.removed_count}
    assert api.post(url.format(first.record_id)).json()["reason"] == "not_latest"
    assert api.post(url.format(999_999)).status_code == 404
    rows = api.get(f"/api/sessions/{session.pk}/compactions/").json()
    assert rows[-1]["status"] == "undone"


def test_compact_up_to_over_rest(llm_server) -> None:
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY))
    session = session_to_compact(llm_server)
    api = token_client(session.owner)
    cut = llm_history_load(session=session)[20]
    response = api.post(f"/api/sessions/{session.pk}/compact/", {"upTo": cut.pk}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    record = CompactionRecord.objects.get(session=session)
    assert body["compaction_id"] == record.pk
    assert (record.trigger, record.up_to_message_id) == ("api", cut.pk)
    later = Message.objects.filter(session=session, position__gte=cut.position)
    assert not later.filter(compacted_at__isnull=False).exists()
    bad = api.post(f"/api/sessions/{session.pk}/compact/", {"upTo": "x"}, format="json")
    assert bad.status_code == 400 and bad.json()["reason"] == "invalid"
    unknown = api.post(f"/api/sessions/{session.pk}/compact/", {"upTo": 10**9}, format="json")
    assert unknown.status_code == 422 and unknown.json()["reason"] == "unknown_message"


def test_pin_and_unpin_any_message(compacted) -> None:
    session, _outcome, api = compacted
    message = llm_history_load(session=session)[-1]
    url = f"/api/sessions/{session.pk}/messages/{message.pk}/"
    assert api.get(url).json()["pinned"] is False
    response = api.patch(url, {"pinned": True}, format="json")
    assert response.status_code == 200 and response.json()["pinned"] is True
    assert Message.objects.get(pk=message.pk).pinned
    assert api.patch(url, {"pinned": False}, format="json").json()["pinned"] is False
    page = api.get(f"/api/sessions/{session.pk}/messages/").json()["results"]
    assert all("pinned" in m for m in page)


def test_pinning_a_summarized_original_brings_it_back(compacted) -> None:
    session, _outcome, api = compacted
    gone = Message.objects.filter(session=session, compacted_at__isnull=False).first()
    assert gone is not None
    url = f"/api/sessions/{session.pk}/messages/{gone.pk}/"
    body = api.patch(url, {"pinned": True}, format="json").json()
    assert body["pinned"] is True and body["compacted_at"] is None
    assert gone.pk in [m.pk for m in llm_history_load(session=session)]


def test_only_a_summary_can_be_edited_and_the_edit_is_audited(compacted) -> None:
    session, outcome, api = compacted
    summary_url = f"/api/sessions/{session.pk}/messages/{outcome.summary_message_id}/"
    response = api.patch(summary_url, {"content": "## 目标\nrewritten"}, format="json")
    assert response.status_code == 200
    assert response.json()["content"] == "## 目标\nrewritten"
    detail = api.get(f"/api/sessions/{session.pk}/compactions/{outcome.record_id}/").json()
    assert [e["by"] for e in detail["edits"]] == [session.owner.username]
    other = llm_history_load(session=session)[-1]
    refused = api.patch(
        f"/api/sessions/{session.pk}/messages/{other.pk}/", {"content": "x"}, format="json"
    )
    assert refused.status_code == 400
    assert refused.json() == {
        "error": "Only a compaction summary's content can be edited",
        "reason": "not_a_summary",
    }
    assert api.patch(summary_url, {}, format="json").status_code == 400
    missing = f"/api/sessions/{session.pk}/messages/{10**9}/"
    assert api.patch(missing, {"pinned": True}, format="json").status_code == 404


def test_a_pin_or_an_edit_while_a_compaction_runs_is_refused_not_lost(compacted) -> None:
    """Issue 27 item 6: the compaction would summarize the span as it was when it started."""
    session, outcome, api = compacted
    ChatSession.objects.filter(pk=session.pk).update(
        lease_holder="c/elsewhere:1:abc",
        compacting_holder="c/elsewhere:1:abc",
        lease_expires_at=timezone.now() + timedelta(seconds=30),
    )
    message = llm_history_load(session=session)[-1]
    pin = api.patch(
        f"/api/sessions/{session.pk}/messages/{message.pk}/", {"pinned": True}, format="json"
    )
    edit = api.patch(
        f"/api/sessions/{session.pk}/messages/{outcome.summary_message_id}/",
        {"content": "## 目标\nrewritten"},
        format="json",
    )
    assert (pin.status_code, pin.json()["reason"]) == (409, "in_progress")
    assert (edit.status_code, edit.json()["reason"]) == (409, "in_progress")
    assert not Message.objects.get(pk=message.pk).pinned
    assert "rewritten" not in Message.objects.get(pk=outcome.summary_message_id).content


def test_the_agents_compaction_controls(alice, alice_api) -> None:
    body = alice_api.post("/api/agents/", {"name": "Plain"}, format="json").json()
    assert body["compaction_mode"] == "auto"
    assert body["compaction_instructions"] == "" and body["compaction_token_cap"] is None
    url = f"/api/agents/{body['id']}/"
    changed = alice_api.patch(
        url,
        {
            "compaction_mode": "ask",
            "compaction_instructions": "Keep ticket numbers.",
            "compaction_token_cap": 200_000,
        },
        format="json",
    )
    assert changed.status_code == 200, changed.json()
    agent = Agent.objects.get(pk=body["id"])
    assert (agent.compaction_mode, agent.compaction_instructions, agent.compaction_token_cap) == (
        "ask",
        "Keep ticket numbers.",
        200_000,
    )
    assert alice_api.patch(url, {"compaction_mode": "never"}, format="json").status_code == 400
    small = alice_api.patch(url, {"compaction_token_cap": 100}, format="json")
    assert small.status_code == 400
    assert small.json() == {
        "compaction_token_cap": [
            "The compaction token cap must be at least 1024 tokens (or blank for none)."
        ]
    }
    assert alice_api.patch(url, {"compaction_token_cap": None}, format="json").status_code == 200
    assert make_agent().compaction_mode == "auto"
