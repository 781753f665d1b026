"""REST compaction statuses come from the one reason table (issue 14, item 8).

A lost race (another compaction holds the session, the history moved under the summary, a
stop cancelled it) is 409: try again. Every reason a compaction can end with has its status
in ``agents.reasons`` — the table the socket's ``reason`` and the page's texts come from —
so a reason added there can never fall through to a 500. After a REST compaction, the pages
open on the session get the new ``token_update``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.test import AsyncClient
from django.utils import timezone
from rest_framework.authtoken.models import Token

from agents import reasons
from agents.models import ChatSession
from agents.services import session_stop
from scripted_llm import Reply, ScriptedLLMServer
from tests.support.history import session_to_compact
from tests.support.sockets import connect
from tests.support.summaries import SUMMARY

pytestmark = pytest.mark.django_db(transaction=True)

LOST_RACES = {"in_progress", "history_changed", "cancelled"}


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
