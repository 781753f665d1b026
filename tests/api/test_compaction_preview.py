"""Preview before applying over REST (issue 17 item 6): ``POST …/compact/ {"preview": true}``,
``POST …/compact/previews/<id>/accept/`` and ``DELETE …/compact/previews/<id>/``."""

from __future__ import annotations

import pytest
from django.test import Client

import condense as core
from agents.models import CompactionPreview, CompactionRecord, Message
from agents.selectors import llm_history_load
from compaction.controls import message_pin
from scripted_llm import Reply
from tests.support.api_clients import token_client
from tests.support.history import history_rows, session_to_compact
from tests.support.summaries import KEY_VALUE_SUMMARY

pytestmark = pytest.mark.django_db(transaction=True)

PREVIEW_KEYS = {"sessionId", "previewId", "summary", "removedCount", "tokensBefore", "tokensAfter"}
COMPACT_KEYS = {
    "removed_count",
    "summary_message_id",
    "tokens_before",
    "tokens_after",
    "compaction_id",
}


@pytest.fixture
def previewed(llm_server):
    """A session of 40 turns with a preview of its compaction; its owner's API client."""
    llm_server.enqueue(Reply(text=KEY_VALUE_SUMMARY, input_tokens=600, output_tokens=60))
    session = session_to_compact(llm_server)
    api = token_client(session.owner)
    rows = history_rows(session)
    response = api.post(
        f"/api/sessions/{session.pk}/compact/",
        {"preview": True, "instructions": "keep paths"},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert history_rows(session) == rows  # nothing applied
    return session, response.json(), api


def _accept(api, session, preview_id, body=None):
    url = f"/api/sessions/{session.pk}/compact/previews/{preview_id}/accept/"
    return api.post(url, body or {}, format="json")


def test_a_preview_answers_with_the_summary_and_applies_nothing(previewed) -> None:
    session, preview, _api = previewed
    assert set(preview) == PREVIEW_KEYS
    assert preview["sessionId"] == str(session.pk)
    assert KEY_VALUE_SUMMARY.strip() in preview["summary"]
    assert preview["removedCount"] > 0 and preview["tokensAfter"] < preview["tokensBefore"]
    row = CompactionPreview.objects.get(pk=preview["previewId"])
    assert (row.instructions, row.audit["trigger"], row.created_by_id) == (
        "keep paths",
        "api",
        session.owner.pk,
    )
    assert not CompactionRecord.objects.filter(session=session).exists()


def test_accepting_answers_as_the_compact_endpoint(previewed) -> None:
    session, preview, api = previewed
    response = _accept(api, session, preview["previewId"])
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == COMPACT_KEYS
    assert body["removed_count"] == preview["removedCount"]
    assert (body["tokens_before"], body["tokens_after"]) == (
        preview["tokensBefore"],
        preview["tokensAfter"],
    )
    summary = Message.objects.get(pk=body["summary_message_id"])
    assert core.summary_body(summary.content) == preview["summary"]
    record = api.get(f"/api/sessions/{session.pk}/compactions/{body['compaction_id']}/").json()
    assert (record["trigger"], record["status"], record["reason"]) == ("api", "done", "previewed")
    assert (record["auxInputTokens"], record["auxOutputTokens"], record["requestCount"]) == (
        600,
        60,
        1,
    )
    assert record["instructions"] == "keep paths" and record["edits"] == []
    again = _accept(api, session, preview["previewId"])
    assert again.status_code == 404


def test_an_edited_accept_is_kept_in_the_audit(previewed) -> None:
    session, preview, api = previewed
    edited = "## 目标\n保留 src/parser.py 的修复思路\n## 下一步\n补测试。"
    response = _accept(api, session, preview["previewId"], {"summary": edited})
    assert response.status_code == 200, response.content
    body = response.json()
    summary = Message.objects.get(pk=body["summary_message_id"])
    assert core.summary_body(summary.content) == edited
    record = api.get(f"/api/sessions/{session.pk}/compactions/{body['compaction_id']}/").json()
    [edit] = record["edits"]
    assert edit["by"] == session.owner.username and edit["preview"] is True
    assert core.summary_body(edit["previous"]) == preview["summary"]


@pytest.mark.parametrize("summary", ["", "   ", "a\x00b"])
def test_a_bad_summary_is_refused(previewed, summary: str) -> None:
    session, preview, api = previewed
    response = _accept(api, session, preview["previewId"], {"summary": summary})
    assert response.status_code == 400
    assert "summary" in response.json()
    assert CompactionPreview.objects.filter(pk=preview["previewId"]).exists()


def test_a_changed_history_is_409_and_nothing_is_applied(previewed) -> None:
    session, preview, api = previewed
    message_pin(session=session, message_id=llm_history_load(session=session)[5].pk, pinned=True)
    rows = history_rows(session)
    response = _accept(api, session, preview["previewId"])
    assert response.status_code == 409
    assert response.json() == {
        "error": "The history changed during the compaction; try again",
        "reason": "history_changed",
    }
    assert history_rows(session) == rows
    assert not CompactionRecord.objects.filter(session=session, status="done").exists()


def test_discarding(previewed) -> None:
    session, preview, api = previewed
    url = f"/api/sessions/{session.pk}/compact/previews/{preview['previewId']}/"
    response = api.delete(url)
    assert response.status_code == 204
    assert not CompactionPreview.objects.exists()
    gone = api.delete(url)
    assert gone.status_code == 404 and gone.json() == {"detail": "No such preview."}
    assert _accept(api, session, preview["previewId"]).status_code == 404
    [record] = CompactionRecord.objects.filter(session=session)
    assert (record.status, record.reason) == ("cancelled", "preview_discarded")


def test_another_users_preview_is_not_found(previewed, bob_api) -> None:
    session, preview, _api = previewed
    base = f"/api/sessions/{session.pk}/compact/"
    assert bob_api.post(base, {"preview": True}, format="json").status_code == 404
    assert _accept(bob_api, session, preview["previewId"]).status_code == 404
    assert bob_api.delete(f"{base}previews/{preview['previewId']}/").status_code == 404
    assert CompactionPreview.objects.filter(pk=preview["previewId"]).exists()


def test_a_cookie_client_needs_the_csrf_token(previewed) -> None:
    session, preview, _api = previewed
    client = Client(enforce_csrf_checks=True)
    client.force_login(session.owner)
    url = f"/api/sessions/{session.pk}/compact/previews/{preview['previewId']}/accept/"
    assert client.post(url, {}, content_type="application/json").status_code == 403
    assert client.delete(url.removesuffix("accept/")).status_code == 403
    assert CompactionPreview.objects.filter(pk=preview["previewId"]).exists()


def test_the_schema_documents_the_preview(alice_api) -> None:
    schema = alice_api.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    accept = paths["/api/sessions/{session_id}/compact/previews/{preview_id}/accept/"]
    assert set(accept) == {"post"} and {"200", "404", "409"} <= set(accept["post"]["responses"])
    assert set(paths["/api/sessions/{session_id}/compact/previews/{preview_id}/"]) == {"delete"}
    body = schema["components"]["schemas"]["CompactPreviewRequest"]["properties"]
    assert {"instructions", "upTo", "preview"} <= set(body)
    assert set(schema["components"]["schemas"]["CompactionPreview"]["properties"]) == PREVIEW_KEYS
