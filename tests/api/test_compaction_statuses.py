"""REST compaction statuses come from the one reason table (issue 14, item 8).

A lost race (another compaction holds the session, the history moved under the summary, a
stop cancelled it) is 409: try again. Every reason a compaction can end with has its status
in ``agents.reasons`` — the table the socket's ``reason`` and the page's texts come from —
so a reason added there can never fall through to a 500. After a REST compaction, the pages
open on the session get the new ``token_update``.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.testing import HttpCommunicator
from django.core.handlers.asgi import ASGIHandler
from django.test import AsyncClient
from django.urls import resolve
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.views import APIView

from agents import reasons
from agents.models import ChatSession
from agents.services import session_stop
from scripted_llm import Reply, ScriptedLLMServer
from tests.support.history import session_to_compact
from tests.support.sockets import connect
from tests.support.summaries import SUMMARY
from web.api import ApiView, SessionCompactView

pytestmark = pytest.mark.django_db(transaction=True)

LOST_RACES = {"in_progress", "history_changed", "cancelled", "compaction_interrupted"}


@pytest.fixture(autouse=True)
def _fresh_channel_layer():
    """One layer instance per test (each async test has its own event loop)."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


def test_every_reason_a_compaction_ends_with_has_its_status_in_the_one_table() -> None:
    statuses = {code: reasons.http_status(code) for code in reasons.COMPACTION_OUTCOMES}
    assert set(statuses.values()) <= {409, 422, 500, 502}, statuses
    assert {code for code, status in statuses.items() if status == 409} == LOST_RACES
    for provider_failure in reasons.codes("provider"):
        assert statuses[provider_failure] == 502
    assert reasons.http_status("under_threshold") == reasons.http_status("no_gain") == 422
    assert reasons.http_status("storage_error") == 500
    assert reasons.http_status("a_reason_from_a_newer_server") == 500


async def _post_compact(session: ChatSession) -> tuple[int, dict]:
    token = await database_sync_to_async(
        lambda: Token.objects.get_or_create(user=session.owner)[0].key
    )()
    response = await AsyncClient().post(
        f"/api/sessions/{session.pk}/compact/",
        {},
        content_type="application/json",
        headers={"Authorization": f"Token {token}", "Accept-Language": "en"},
    )
    return response.status_code, response.json()


def _losing(action):
    """An auxiliary model that, while it writes the summary, lets ``action`` happen to the
    session (the race the compaction then loses)."""
    session_ids: list[str] = []

    def responder(body, wire):
        action(session_ids[0])
        return Reply(text=SUMMARY)

    return session_ids, responder


def _lease_taken(session_id: str) -> None:
    """Another process's compaction has the session (its lease runs for a minute)."""
    ChatSession.objects.filter(pk=session_id).update(
        lease_holder="another:1:cafe",
        lease_expires_at=timezone.now() + timedelta(seconds=60),
    )


def _stopped(session_id: str) -> None:
    session_stop(session_id=session_id)


@pytest.mark.parametrize(
    ("action", "reason"),
    [(_lease_taken, "history_changed"), (_stopped, "cancelled")],
    ids=["lease-taken", "stopped"],
)
async def test_a_compaction_that_loses_a_race_is_409(action, reason) -> None:
    ids, responder = _losing(action)
    with ScriptedLLMServer(responder=responder) as llm:
        session = await database_sync_to_async(session_to_compact)(llm)
        ids.append(str(session.pk))
        status, body = await _post_compact(session)
    assert (status, body["reason"]) == (409, reason), body
    assert body["error"]


async def test_a_compaction_while_another_holds_the_session_is_409() -> None:
    with ScriptedLLMServer(responder=lambda b, w: Reply(text=SUMMARY)) as llm:
        session = await database_sync_to_async(session_to_compact)(llm)
        await sync_to_async(_lease_taken)(str(session.pk))
        status, body = await _post_compact(session)
    assert (status, body["reason"]) == (409, "in_progress"), body


async def test_an_open_page_gets_the_token_update_of_a_rest_compaction() -> None:
    with ScriptedLLMServer(responder=lambda b, w: Reply(text=SUMMARY)) as llm:
        session = await database_sync_to_async(session_to_compact)(llm)
        token = await database_sync_to_async(
            lambda: Token.objects.get_or_create(user=session.owner)[0].key
        )()
        page, connected = await connect(token=token, path=f"/ws/chat/html/?session={session.pk}")
        assert connected
        status, body = await _post_compact(session)
        assert status == 200, body
        frames = [await page.receive_from(timeout=10)]
        while 'id="token-bar"' not in frames[-1]:
            frames.append(await page.receive_from(timeout=10))
        await page.disconnect()
    meter = frames[-1]
    after = body["tokens_after"]
    assert f'aria-valuenow="{after}"' in meter, meter[:800]


def test_the_compact_endpoint_is_a_plain_drf_view() -> None:
    """Issue 23: DRF's own dispatch runs its policy (no hand-run copy of ``APIView.dispatch``
    beside an async function view)."""
    view = resolve("/api/sessions/00000000-0000-0000-0000-000000000000/compact/").func
    assert view.view_class is SessionCompactView  # type: ignore[attr-defined]
    assert issubclass(SessionCompactView, APIView)
    assert SessionCompactView.dispatch is ApiView.dispatch  # DRF's, behind the login mark


async def _asgi(method: str, path: str, token: str, body: bytes = b"") -> tuple[int, bytes]:
    """One request through Django's own ASGI handler, as Daphne serves it (each request's
    sync view in a thread of its own; Django's ``AsyncClient`` shares one thread)."""
    headers = [
        (b"host", b"localhost"),
        (b"authorization", f"Token {token}".encode()),
        (b"content-type", b"application/json"),
    ]
    communicator = HttpCommunicator(ASGIHandler(), method, path, body=body, headers=headers)
    response = await communicator.get_response(timeout=30)
    await communicator.wait(timeout=10)  # the handler closes its database connections
    return response["status"], response["body"]


async def test_other_requests_are_answered_while_a_rest_compaction_waits() -> None:
    """The auxiliary model takes 2 s: meanwhile the process answers other API requests."""
    with ScriptedLLMServer(responder=lambda b, w: Reply(text=SUMMARY, delay=2.0)) as llm:
        session = await database_sync_to_async(session_to_compact)(llm)
        token = await database_sync_to_async(
            lambda: Token.objects.get_or_create(user=session.owner)[0].key
        )()
        compact = f"/api/sessions/{session.pk}/compact/"
        compacting = asyncio.ensure_future(_asgi("POST", compact, token, b"{}"))
        await sync_to_async(llm.wait_for_requests, thread_sensitive=False)(
            1
        )  # the summary is being written
        started = time.monotonic()
        listed, _ = await _asgi("GET", "/api/sessions/", token)
        answered_in = time.monotonic() - started
        assert not compacting.done(), answered_in
        status, body = await compacting
    assert listed == 200 and answered_in < 1.0, answered_in
    assert status == 200 and json.loads(body)["removed_count"] > 0, body
