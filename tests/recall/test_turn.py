"""Done when (issue 18): on a compacted real transcript, a scripted model that calls
``search_history`` with a planted fact's neighbourhood gets the fact back with its message
id, through a real chat turn (socket, gateway, runtime, SDK, wire); and ``context_status``
agrees with the token bar the same turn published."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from agents.models import Message, ModelChannel
from condense import ToolCall
from scripted_llm import Reply
from tests.recall.support import ENGLISH_FACT, SUMMARY, compacted_transcript
from tests.support.sockets import connect, receive_until, send, token_for

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def _compacted(server, tmp_path):
    planted = compacted_transcript(server, tmp_path)
    # the chat itself runs on a large window: no automatic compaction in the turn
    ModelChannel.objects.filter(pk=planted.session.agent.model_channel_id).update(
        context_window=200_000
    )
    return planted, planted.session.owner


def _tool_names(body: dict, provider: str) -> list[str]:
    if provider == "anthropic":
        return [t["name"] for t in body["tools"]]
    return [t["function"]["name"] for t in body["tools"]]


def _tool_results(body: dict, provider: str) -> list[str]:
    """The tool results the model was sent back, in order."""
    if provider == "anthropic":
        return [
            block["content"] if isinstance(block["content"], str) else block["content"][0]["text"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for block in m["content"]
            if block.get("type") == "tool_result"
        ]
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("provider", ["openai_compatible", "anthropic"])
async def test_the_model_recalls_a_planted_fact_with_its_message_id(
    llm_server, tmp_path, provider
) -> None:
    planted, user = await _compacted(llm_server, tmp_path)
    if provider == "anthropic":
        await database_sync_to_async(
            lambda: ModelChannel.objects.filter(pk=planted.session.agent.model_channel_id).update(
                provider="anthropic", base_url=llm_server.anthropic_base_url
            )
        )()
    calls = [  # context_status first: nothing is stored between the bar's reading and it
        ToolCall("call_c", "context_status", "{}"),
        ToolCall("call_s", "search_history", json.dumps({"query": "nightly reconciliation owner"})),
    ]
    chat = iter([Reply(text="Let me look that up.", tool_calls=calls), Reply(text="Priya.")])
    llm_server.responder = lambda body, wire: (
        next(chat) if body.get("tools") else Reply(text=SUMMARY)  # summaries carry no tools
    )
    ws, _ = await connect(token=await token_for(user), origin=None)
    question = "Who owns the nightly reconciliation job we saw earlier?"
    await send(ws, {"type": "chat", "sessionId": str(planted.session.pk), "content": question})
    events = await receive_until(ws, "turn_done", timeout=30)
    await ws.disconnect()
    assert "compaction_start" not in [e["type"] for e in events]

    chat_requests = [r.body for r in llm_server.requests if r.body.get("tools")]
    assert len(chat_requests) == 2
    first, second = chat_requests
    assert {"search_history", "read_history_message", "context_status"} <= set(
        _tool_names(first, provider)
    )
    assert ENGLISH_FACT not in json.dumps(first, ensure_ascii=False)  # compacted away

    # what the model got back: the fact, with the id of the message that holds it
    status_result, search_result = _tool_results(second, provider)[-2:]
    hits = json.loads(search_result)["hits"]
    assert hits[0]["id"] == planted.message.pk and hits[0]["role"] == "tool"
    assert "Priya Natarajan" in hits[0]["snippet"]
    stored = [e["message"] for e in events if e["type"] == "message"]
    tool_messages = [m for m in stored if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_c", "call_s"]
    assert json.loads(tool_messages[1]["content"]) == json.loads(search_result)

    # context_status: the token bar's reading published right before the tools ran
    kinds = [e["type"] for e in events]
    before_tools = kinds.index("message", kinds.index("delta"))  # the assistant's message
    bar = next(e for e in events[before_tools:] if e["type"] == "token_update")["context"]
    status = json.loads(status_result)
    assert status == {
        "usedTokens": bar["usedTokens"],
        "thresholdTokens": bar["maxTokens"] * bar["thresholdPercent"] // 100,
        "maxTokens": bar["maxTokens"],
        "percent": bar["percent"],
        "compactionDue": False,
    }
    assert (
        await database_sync_to_async(
            Message.objects.filter(pk=planted.message.pk, compacted_at__isnull=False).exists
        )()
        or planted.message.pruned_at is not None
    )
