"""Preview before applying over the socket (issue 17 item 6): ``compact`` with ``preview``,
``compaction_preview``, ``preview_accept`` (edited or not), ``preview_discard``, and the
page's drawer (the HTML encoding of ``compaction_preview``)."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.conf import settings
from django.test import Client

import condense as core
from agents.events import CompactionPreviewReady
from agents.models import CompactionPreview, CompactionRecord, Message
from agents.selectors import llm_history_load
from channels_app.html_encoder import render_event_html
from channels_app.protocol import (
    CompactFrame,
    PreviewAcceptFrame,
    PreviewDiscardFrame,
    ProtocolError,
    parse_client_frame,
)
from scripted_llm import Reply
from tests.factories import make_user
from tests.support.history import chat_to_compact
from tests.support.sockets import connect, receive_until, send, token_for
from tests.support.summaries import SUMMARY

pytestmark = pytest.mark.django_db(transaction=True)


_setup = database_sync_to_async(chat_to_compact)


@database_sync_to_async
def _visible(session) -> list[tuple[int, str]]:
    return [(m.pk, m.content) for m in llm_history_load(session=session)]


@database_sync_to_async
def _stored_count(session) -> int:
    return Message.objects.filter(session=session).count()


# --- the frames -------------------------------------------------------------------------


def _parse(frame: str):
    return parse_client_frame(frame, max_bytes=256 * 1024)


def test_the_frames_parse() -> None:
    compact = _parse('{"type": "compact", "sessionId": "s", "preview": true, "instructions": "x"}')
    assert compact == CompactFrame("s", "x", None, preview=True)
    assert _parse('{"type": "compact", "sessionId": "s", "preview": "true"}').preview is True
    assert _parse('{"type": "compact", "sessionId": "s"}').preview is False
    accept = _parse(
        '{"type": "preview_accept", "sessionId": "s", "previewId": "7", "summary": "new"}'
    )
    assert accept == PreviewAcceptFrame("s", 7, "new")
    assert _parse('{"type": "preview_accept", "sessionId": "s", "previewId": 7}').summary is None
    assert _parse('{"type": "preview_discard", "sessionId": "s", "previewId": 7}') == (
        PreviewDiscardFrame("s", 7)
    )


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (
            '{"type": "compact", "sessionId": "s", "preview": "maybe"}',
            "'preview' must be true or false",
        ),
        ('{"type": "preview_accept", "sessionId": "s"}', "'previewId' must be a positive integer"),
        (
            '{"type": "preview_discard", "sessionId": "s", "previewId": 0}',
            "'previewId' must be a positive integer",
        ),
        (
            '{"type": "preview_accept", "sessionId": "s", "previewId": 1, "summary": 5}',
            "'summary' must be a string",
        ),
        (
            '{"type": "preview_accept", "sessionId": "s", "previewId": 1, "summary": "  "}',
            "'summary' is empty",
        ),
        (
            '{"type": "preview_accept", "sessionId": "s", "previewId": 1, "summary": "a\\u0000"}',
            "'summary' contains a NUL character, which cannot be stored",
        ),
    ],
)
def test_bad_frames_are_refused_with_their_field(frame: str, message: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        _parse(frame)
    assert refused.value.error == message
    assert refused.value.reason in {"bad_field", "invalid_characters"}


# --- over the socket --------------------------------------------------------------------


async def test_preview_then_an_edited_accept_over_the_socket(llm_server) -> None:
    llm_server.enqueue(Reply(text=SUMMARY))
    user, session = await _setup(llm_server)
    sid = str(session.pk)
    before, stored = await _visible(session), await _stored_count(session)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "compact", "sessionId": sid, "preview": True, "instructions": "路径"})
    events = await receive_until(ws, "compaction_preview", timeout=20)
    kinds = [e["type"] for e in events]
    assert "compaction_start" in kinds and "compaction_done" not in kinds
    preview = events[-1]
    assert set(preview) == {
        "type",
        "sessionId",
        "previewId",
        "summary",
        "removedCount",
        "tokensBefore",
        "tokensAfter",
    }
    assert preview["sessionId"] == sid and SUMMARY.strip() in preview["summary"]
    assert preview["removedCount"] > 0 and preview["tokensAfter"] < preview["tokensBefore"]
    meter = (await receive_until(ws, "token_update", timeout=10))[-1]
    assert meter["context"]["usedTokens"] == preview["tokensBefore"]  # nothing applied
    assert await _visible(session) == before and await _stored_count(session) == stored
    assert "路径" in llm_server.requests[0].body["messages"][0]["content"]

    edited = "## 目标\n修复 src/parser.py（我改过）\n## 下一步\n补回归测试。"
    await send(
        ws,
        {
            "type": "preview_accept",
            "sessionId": sid,
            "previewId": preview["previewId"],
            "summary": edited,
        },
    )
    events = await receive_until(ws, "compaction_done", timeout=10)
    done = events[-1]
    assert "message" in [e["type"] for e in events]  # the bubble, stored
    assert done["removedCount"] == preview["removedCount"]
    meter = (await receive_until(ws, "token_update", timeout=10))[-1]
    assert meter["context"]["usedTokens"] == done["tokensAfter"]  # one counter
    summary = await database_sync_to_async(Message.objects.get)(pk=done["summaryMessageId"])
    assert core.summary_body(summary.content) == edited
    record = await database_sync_to_async(CompactionRecord.objects.get)(
        summary_message_id=done["summaryMessageId"]
    )
    assert (record.trigger, record.status, record.reason) == ("manual", "done", "previewed")
    assert record.instructions == "路径" and record.edits[0]["by"] == user.username
    assert len(llm_server.requests) == 1  # the accept called no model
    await ws.disconnect()


async def test_discard_and_a_gone_preview(llm_server) -> None:
    llm_server.enqueue(Reply(text=SUMMARY))
    user, session = await _setup(llm_server)
    sid = str(session.pk)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "compact", "sessionId": sid, "preview": True})
    preview = (await receive_until(ws, "compaction_preview", timeout=20))[-1]
    await send(ws, {"type": "preview_discard", "sessionId": sid, "previewId": preview["previewId"]})
    await send(ws, {"type": "preview_accept", "sessionId": sid, "previewId": preview["previewId"]})
    refused = (await receive_until(ws, "error", timeout=10))[-1]
    assert refused["reason"] == "history_changed" and refused["sessionId"] == sid
    assert not await database_sync_to_async(CompactionPreview.objects.exists)()
    record = await database_sync_to_async(CompactionRecord.objects.get)(session=session)
    assert (record.status, record.reason) == ("cancelled", "preview_discarded")
    # discarding what is gone is no error: nothing comes back
    await send(ws, {"type": "preview_discard", "sessionId": sid, "previewId": preview["previewId"]})
    await send(ws, {"type": "preview_accept", "sessionId": sid, "previewId": "x"})
    bad = (await receive_until(ws, "error", timeout=10))[-1]
    assert bad["reason"] == "bad_field"
    await ws.disconnect()


async def test_a_strangers_preview_frames_are_refused(llm_server) -> None:
    llm_server.enqueue(Reply(text=SUMMARY))
    owner, session = await _setup(llm_server)
    sid = str(session.pk)
    ws, _ = await connect(token=await token_for(owner), origin=None)
    await send(ws, {"type": "compact", "sessionId": sid, "preview": True})
    preview = (await receive_until(ws, "compaction_preview", timeout=20))[-1]
    await ws.disconnect()
    stranger = await database_sync_to_async(make_user)()
    ws, _ = await connect(token=await token_for(stranger), origin=None)
    for kind in ("preview_accept", "preview_discard"):
        await send(ws, {"type": kind, "sessionId": sid, "previewId": preview["previewId"]})
        refused = (await receive_until(ws, "error", timeout=10))[-1]
        assert refused["reason"] == "unknown_session"
    await send(ws, {"type": "compact", "sessionId": sid, "preview": True})
    assert (await receive_until(ws, "error", timeout=10))[-1]["reason"] == "unknown_session"
    assert await database_sync_to_async(
        CompactionPreview.objects.filter(pk=preview["previewId"]).exists
    )()
    await ws.disconnect()


# --- the page ---------------------------------------------------------------------------


def _cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


async def test_the_page_socket_opens_the_preview_drawer(llm_server) -> None:
    llm_server.enqueue(Reply(text=SUMMARY))
    user, session = await _setup(llm_server)
    cookie = await database_sync_to_async(_cookie)(user)
    ws, connected = await connect(path=f"/ws/chat/html/?session={session.pk}", cookie=cookie)
    assert connected
    await send(ws, {"type": "compact", "sessionId": str(session.pk), "preview": "true"})
    for _ in range(50):
        frame = await ws.receive_from(timeout=20)
        if 'id="summary-drawer"' in frame:
            break
    else:
        raise AssertionError("no drawer")
    preview = await database_sync_to_async(CompactionPreview.objects.get)(session=session)
    assert 'role="dialog"' in frame and f'data-preview-id="{preview.pk}"' in frame
    assert 'data-compacting="false"' in frame  # the pending bubble ends with it
    assert "<h2>目标</h2>" in frame  # the summary, as Markdown
    await ws.disconnect()


def test_the_drawer_renders_the_summary_safely_with_its_forms() -> None:
    event = CompactionPreviewReady(
        session_id="5f0c2f1e-0000-4000-8000-000000000000",
        preview_id=42,
        summary="## 目标\n修复 <script>alert(1)</script> src/parser.py\n[x](javascript:alert(1))",
        removed_count=12,
        tokens_before=9000,
        tokens_after=2100,
    )
    html = render_event_html(event, language="en")
    drawer = html[html.index('<div id="summary-drawer"') :]
    assert 'hx-swap-oob="true"' in drawer.split(">", 1)[0]
    assert 'role="dialog"' in drawer and 'aria-modal="true"' in drawer
    assert "<script" not in drawer and 'href="javascript:' not in drawer
    assert "<h2>目标</h2>" in drawer  # the summary as Markdown
    # the textarea holds the text to edit, escaped; the buttons submit the page's forms
    assert 'name="summary" form="preview-accept-form"' in drawer
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in drawer
    assert drawer.count('name="previewId" value="42"') == 2
    assert 'form="preview-accept-form"' in drawer and 'form="preview-discard-form"' in drawer
    assert "12 messages" in drawer and "9000 → 2100" in drawer
    assert 'data-compacting="false"' in html  # the pending state ends
