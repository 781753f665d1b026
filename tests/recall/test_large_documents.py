"""About 1 MB of distinct words — a model answer, or a ``write_file`` within the tool limits —
makes a search document larger than PostgreSQL's tsvector holds (1 MiB). The message's
INSERT failed with it: the turn ended ``internal_error`` and the output was lost (issue 27
item 2). Now the index keeps what fits and the turn stands."""

from __future__ import annotations

import json
from itertools import product
from string import ascii_lowercase

import pytest
from channels.db import database_sync_to_async

from agents.models import Message
from agents.services import message_append, messages_bulk_append
from condense import ToolCall
from recall import search
from scripted_llm import Reply
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.history import apply_compaction
from tests.support.sockets import connect, receive_until, send, token_for

pytestmark = pytest.mark.postgres


def distinct_words(size: int) -> str:
    """``size`` characters of words that each occur once (a 1 MB text makes a 1.5 MB
    tsvector)."""
    words, total = [], 0
    for letters in product(ascii_lowercase, repeat=5):
        word = "q" + "".join(letters)
        words.append(word)
        total += len(word) + 1
        if total >= size:
            break
    return " ".join(words)


@pytest.mark.django_db
def test_a_megabyte_of_distinct_words_is_stored_and_its_start_is_found() -> None:
    session = make_session()
    text = distinct_words(1_000_000)
    big = message_append(session=session, role="assistant", content=text)
    (tail,) = messages_bulk_append(session=session, rows=[{"role": "user", "content": "next"}])
    apply_compaction(session, [big])

    assert Message.objects.get(pk=big.pk).content == text
    first, middle = text.split()[0], text.split()[len(text.split()) // 3]
    assert [h.id for h in search.search(session=session, query=first)] == [big.pk]
    assert [h.id for h in search.search(session=session, query=middle)] == [big.pk]


@database_sync_to_async
def _chat(server):
    user = make_user()
    channel = make_channel(base_url=server.openai_base_url, context_window=2_000_000)
    return user, make_session(owner=user, agent=make_agent(model_channel=channel))


@database_sync_to_async
def _stored(session) -> list[Message]:
    return list(Message.objects.filter(session=session).order_by("position", "id"))


@pytest.mark.django_db(transaction=True)
async def test_a_megabyte_answer_ends_its_turn_and_is_kept(llm_server, settings) -> None:
    answer = distinct_words(1_000_000)
    # a deployment that allows answers this long (the default cuts at 500,000 characters)
    settings.NETACLAW = {**settings.NETACLAW, "MAX_ANSWER_CHARS": 2 * len(answer)}
    llm_server.enqueue(Reply(text=answer, chunk_size=200_000))
    user, session = await _chat(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "write a lot"})
    events = await receive_until(ws, "turn_done", timeout=60)
    await ws.disconnect()
    assert "error" not in [e["type"] for e in events], [e for e in events if e["type"] == "error"]
    assert [(m.role, m.content == answer) for m in await _stored(session)] == [
        ("user", False),
        ("assistant", True),
    ]


@pytest.mark.django_db(transaction=True)
async def test_a_megabyte_write_file_within_the_limits_ends_its_turn(llm_server) -> None:
    content = distinct_words(990_000)
    call = ToolCall("call_w", "write_file", json.dumps({"path": "words.txt", "content": content}))
    llm_server.enqueue(Reply(tool_calls=[call]), Reply(text="written"))
    user, session = await _chat(llm_server)
    ws, _ = await connect(token=await token_for(user), origin=None)
    await send(ws, {"type": "chat", "sessionId": str(session.pk), "content": "save the words"})
    events = await receive_until(ws, "turn_done", timeout=60)
    await ws.disconnect()
    assert "error" not in [e["type"] for e in events]
    stored = await _stored(session)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert json.loads(stored[1].tool_calls[0]["arguments"])["content"] == content
    assert stored[2].content.startswith("wrote ") and stored[3].content == "written"
