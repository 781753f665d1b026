"""A chat's own model (issue 26 item 3): the chat overrides its agent's model channel, the
turn, the token bar, the window and the threshold follow it, and a switch to a window the
history no longer fits asks to compact first."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from agents.leases import TURN, new_holder
from agents.meter import meter_read
from agents.models import ChatSession, CompactionRecord
from agents.services import lease_acquire, messages_bulk_append
from agents.usage import session_usage
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.api_clients import token_client
from tests.support.sockets import connect, receive_until, send, token_for
from tests.support.summaries import KEY_VALUE_SUMMARY, is_summary_request

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def chat(llm_server):
    """A chat of 50 messages (about 4,300 tokens) on a 200k agent model, with a small model (a
    4,096-token window: threshold 2,867) and a mid one (32k) to switch to."""
    user = make_user()
    base = llm_server.openai_base_url
    big = make_channel(base_url=base, model="big-model", context_window=200_000, is_auxiliary=True)
    small = make_channel(base_url=base, model="small-model", context_window=4_096)
    mid = make_channel(
        base_url=base,
        model="mid-model",
        context_window=32_000,
        input_price_per_million=2,
        output_price_per_million=8,
    )
    agent = make_agent(model_channel=big, auxiliary_model_channel=big, owner=user)
    session = make_session(owner=user, agent=agent)
    messages_bulk_append(
        session=session,
        rows=[
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"第 {i} 轮 " + "内容" * 150}
            for i in range(50)
        ],
    )
    return session, {"big": big, "small": small, "mid": mid}, token_client(user)


def _session(session) -> ChatSession:
    return ChatSession.objects.select_related("model_channel", "agent__model_channel").get(
        pk=session.pk
    )


def test_a_switch_changes_the_model_the_bar_and_the_next_turn(llm_server, chat) -> None:
    session, channels, client = chat
    url = f"/api/sessions/{session.pk}/"
    answer = client.patch(url, {"modelChannel": channels["mid"].pk}, format="json")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["model_channel"] == channels["mid"].pk
    assert body["channel"] == {
        "id": channels["mid"].pk,
        "name": channels["mid"].name,
        "model": "mid-model",
        "contextWindow": 32_000,
    }
    assert "api_key" not in answer.content.decode() and "sk-test" not in answer.content.decode()
    reading = meter_read(session=_session(session))
    assert reading.max_tokens == 32_000 and reading.threshold_tokens == 32_000 * 70 // 100

    # the next turn asks the chat's model, not the agent's
    llm_server.enqueue(Reply(text="中模型的回答", input_tokens=1000, output_tokens=10))
    user = session.owner

    async def turn() -> list[dict]:
        ws, _ = await connect(token=await token_for(user), origin=None)
        await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "下一问"})
        events = await receive_until(ws, "turn_done", timeout=20)
        await ws.disconnect()
        return events

    events = async_to_sync(turn)()
    assert llm_server.requests[-1].body["model"] == "mid-model"
    meters = [e for e in events if e["type"] == "token_update"]
    assert meters[-1]["context"]["maxTokens"] == 32_000
    # usage is priced at the chat's model
    assert session_usage(session=_session(session)).cost is not None

    # null: back to the agent's model
    back = client.patch(url, {"modelChannel": None}, format="json")
    assert back.status_code == 200 and back.json()["model_channel"] is None
    assert back.json()["channel"]["model"] == "big-model"
    assert meter_read(session=_session(session)).max_tokens == 200_000


def test_a_window_the_history_does_not_fit_asks_to_compact_first(llm_server, chat) -> None:
    session, channels, client = chat
    url = f"/api/sessions/{session.pk}/"
    refused = client.patch(url, {"modelChannel": channels["small"].pk}, format="json")
    assert refused.status_code == 409
    body = refused.json()
    assert body["reason"] == "history_too_large"
    assert body["window"] == 4_096 and body["threshold"] == 4_096 * 70 // 100
    assert body["tokens"] > body["threshold"]
    assert _session(session).model_channel_id is None  # nothing changed
    assert llm_server.requests == []

    llm_server.responder = lambda request, wire: (
        Reply(text=KEY_VALUE_SUMMARY) if is_summary_request(request) else Reply(text="?")
    )
    compacted = client.patch(
        url, {"modelChannel": channels["small"].pk, "compactFirst": True}, format="json"
    )
    assert compacted.status_code == 200, compacted.content
    assert compacted.json()["channel"]["model"] == "small-model"
    assert CompactionRecord.objects.filter(session=session, status="done").count() == 1
    reading = meter_read(session=_session(session))
    assert reading.max_tokens == 4_096 and not reading.over_threshold


def test_a_failed_compaction_keeps_the_model_the_chat_had(llm_server, chat) -> None:
    session, channels, client = chat
    llm_server.responder = lambda request, wire: Reply(text="太短")  # not a usable summary
    answer = client.patch(
        f"/api/sessions/{session.pk}/",
        {"modelChannel": channels["small"].pk, "compactFirst": True},
        format="json",
    )
    assert answer.status_code in {409, 422, 502}, answer.content
    assert answer.json()["reason"] not in {"", None, "history_too_large"}
    assert _session(session).model_channel_id is None
    assert meter_read(session=_session(session)).max_tokens == 200_000


def test_bad_switches_are_refused_and_change_nothing(llm_server, chat) -> None:
    session, channels, client = chat
    url = f"/api/sessions/{session.pk}/"
    disabled = make_channel(model="off", enabled=False)
    for wanted, code, reason in [
        (999_999, 404, "unknown_channel"),
        (disabled.pk, 404, "unknown_channel"),
    ]:
        answer = client.patch(url, {"modelChannel": wanted}, format="json")
        assert (answer.status_code, answer.json()["reason"]) == (code, reason)
    assert client.patch(url, {"modelChannel": "x"}, format="json").status_code == 400
    assert client.patch(url, {}, format="json").status_code == 400
    # while the agent works
    assert lease_acquire(session_id=session.pk, holder=new_holder(TURN), seconds=30)
    busy = client.patch(url, {"modelChannel": channels["mid"].pk}, format="json")
    assert (busy.status_code, busy.json()["reason"]) == (400, "turn_in_progress")
    # someone else's chat
    stranger = token_client(make_user())
    assert (
        stranger.patch(url, {"modelChannel": channels["mid"].pk}, format="json").status_code == 404
    )
    assert _session(session).model_channel_id is None
