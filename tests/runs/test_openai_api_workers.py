"""``POST /v1/chat/completions`` with the worker runner (issue 26 item 9): the web process
stores the message and its job, a ``run_worker`` process runs the turn, and the request
hears the turn's events over Redis — streamed and not, driven by the official ``openai``
client."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from rest_framework.authtoken.models import Token

from agents.models import ChatSession, Message, Role
from agents.selectors import history_load
from condense import ToolCall
from scripted_llm import Reply, ScriptedLLMServer
from tests.factories import make_agent, make_channel, make_user
from tests.support.workers import deployment

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def _world(llm: ScriptedLLMServer) -> str:
    user = make_user()
    channel = make_channel(base_url=llm.openai_base_url, context_window=200_000)
    make_agent(name="worker-agent", owner=user, model_channel=channel)
    return Token.objects.create(user=user).key


def _history(session_id: str) -> list[tuple[str, str]]:
    session = ChatSession.objects.get(pk=session_id)
    return [
        (m.role, m.content)
        for m in history_load(session=session, view="full", include_events=False)
        if m.role in {Role.USER, Role.ASSISTANT}
    ]


def test_completions_run_on_a_worker_streamed_and_not(tmp_path) -> None:
    call = ToolCall("call_1", "write_file", json.dumps({"path": "a.txt", "content": "hi"}))
    answers: list[Any] = [
        Reply(text="工人回答。", input_tokens=50, output_tokens=5),
        Reply(text="先写。", tool_calls=[call], input_tokens=60, output_tokens=6),
        Reply(
            text="写好了。", chunk_size=2, delay_per_chunk=0.02, input_tokens=70, output_tokens=7
        ),
    ]
    with ScriptedLLMServer() as llm:
        llm.enqueue(*answers)
        token = _world(llm)
        with deployment(tmp_path / "var") as live:
            client = openai.OpenAI(
                base_url=f"{live.webs[0].http_url}/v1", api_key=token, max_retries=0, timeout=60
            )
            first = client.chat.completions.create(
                model="worker-agent", messages=[{"role": "user", "content": "你好"}]
            )
            sid = first.model_extra["netaclaw"]["sessionId"]
            chunks = list(
                client.chat.completions.create(
                    model="worker-agent",
                    messages=[
                        {"role": "user", "content": "你好"},
                        {"role": "assistant", "content": "工人回答。"},
                        {"role": "user", "content": "写个文件"},
                    ],
                    stream=True,
                    stream_options={"include_usage": True},
                )
            )
    assert first.choices[0].message.content == "工人回答。"
    assert first.usage is not None and first.usage.total_tokens == 55
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].model_extra["netaclaw"] == {"sessionId": sid, "createdChat": False}
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "先写。\n\n写好了。"
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (130, 13)
    assert _history(sid) == [
        ("user", "你好"),
        ("assistant", "工人回答。"),
        ("user", "写个文件"),
        ("assistant", "先写。"),
        ("assistant", "写好了。"),
    ]
    assert Message.objects.filter(session_id=sid, role=Role.TOOL).count() == 1
