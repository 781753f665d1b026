"""``POST /v1/chat/completions`` over the agents (issue 26 item 9), driven by the official
``openai`` client against a live Daphne, with the scripted model as the agent's model.

The server runs turns in its own process (the in-process runner) on the suite's database
and channel layer; ``tests/runs/test_openai_api_workers.py`` runs the same calls on
workers.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx2
import openai
import pytest
from django.conf import settings
from django.utils import timezone
from rest_framework.authtoken.models import Token

from agents import services
from agents.models import ChatSession, CompactionRecord, Message, Role
from agents.selectors import history_load
from condense import ToolCall
from scripted_llm import Fail, Reply, ScriptedLLMServer
from scripted_llm.server import default_input_tokens
from tests.factories import make_agent, make_channel, make_session, make_user
from tests.support.daphne import LiveServer, running_daphne
from tests.support.summaries import SUMMARY, is_summary_request

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def live(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[LiveServer]:
    """One Daphne for the module (the database is emptied between tests, the server stays)."""
    layer = "redis" if settings.REDIS_URL else "memory"
    with django_db_blocker.unblock():
        with running_daphne(tmp_path_factory.mktemp("openai") / "var", layer=layer) as server:
            yield server


def _world(llm: ScriptedLLMServer, *, window: int = 200_000) -> tuple[Any, Any, str]:
    user = make_user()
    channel = make_channel(base_url=llm.openai_base_url, context_window=window, is_auxiliary=True)
    agent = make_agent(
        name="研究助手", owner=user, model_channel=channel, auxiliary_model_channel=channel
    )
    return user, agent, Token.objects.create(user=user).key


def _client(live: LiveServer, token: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{live.http_url}/v1", api_key=token, max_retries=0, timeout=60)


def _history(session_id: str) -> list[tuple[str, str]]:
    session = ChatSession.objects.get(pk=session_id)
    return [
        (m.role, m.content)
        for m in history_load(session=session, view="full", include_events=False)
        if m.role in {Role.USER, Role.ASSISTANT} and not m.is_compaction_summary
    ]


def _chat_requests(llm: ScriptedLLMServer) -> list[dict[str, Any]]:
    return [r.body for r in llm.requests if r.path.endswith("/chat/completions")]


def test_a_completion_runs_the_agent_in_a_chat_it_names(live) -> None:
    with ScriptedLLMServer() as llm:
        llm.enqueue(Reply(text="你好，我是研究助手。", input_tokens=120, output_tokens=7))
        user, agent, token = _world(llm)
        raw = _client(live, token).chat.completions.with_raw_response.create(
            model="研究助手", messages=[{"role": "user", "content": "你好"}]
        )
        completion = raw.parse()
        sent = _chat_requests(llm)
    session_id = raw.headers["x-netaclaw-session"]
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-") and completion.model == "研究助手"
    choice = completion.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == "你好，我是研究助手。"
    assert choice.finish_reason == "stop"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (120, 7)
    assert completion.usage.total_tokens == 127
    assert completion.model_extra["netaclaw"] == {"sessionId": session_id, "createdChat": True}
    session = ChatSession.objects.get(pk=session_id)
    assert (session.owner_id, session.agent_id, session.title) == (user.pk, agent.pk, "你好")
    assert _history(session_id) == [("user", "你好"), ("assistant", "你好，我是研究助手。")]
    # the agent ran with its own system prompt and its tools
    assert sent[0]["messages"][0] == {"role": "system", "content": "You help."}
    assert {t["function"]["name"] for t in sent[0]["tools"]} >= {"write_file", "search_history"}


def test_the_model_is_the_agents_id_too_and_models_lists_the_usable_agents(live) -> None:
    with ScriptedLLMServer() as llm:
        llm.enqueue(Reply(text="按编号。"))
        user, agent, token = _world(llm)
        shared = make_agent(name="共享助手")  # no owner: every user's
        make_agent(name="别人的助手", owner=make_user())
        client = _client(live, token)
        completion = client.chat.completions.create(
            model=str(agent.pk), messages=[{"role": "user", "content": "你好"}]
        )
        listed = [m.id for m in client.models.list()]
    assert completion.choices[0].message.content == "按编号。"
    assert completion.model == str(agent.pk)
    assert listed == ["研究助手", shared.name]


def test_streaming_sends_role_then_the_text_as_it_streams_then_finish_and_done(live) -> None:
    text = "".join(f"第{i}段。" for i in range(1, 25))
    with ScriptedLLMServer() as llm:
        llm.enqueue(Reply(text=text, chunk_size=4, delay_per_chunk=0.04, output_tokens=33))
        _user, _agent, token = _world(llm)
        raw = _client(live, token).chat.completions.with_raw_response.create(
            model="研究助手",
            messages=[{"role": "user", "content": "讲一讲"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        assert raw.headers["content-type"].startswith("text/event-stream")
        chunks, arrived = [], []
        for chunk in raw.parse():
            chunks.append(chunk)
            arrived.append(time.monotonic())
        sent = _chat_requests(llm)
    session_id = raw.headers["x-netaclaw-session"]
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    assert len({c.id for c in chunks}) == 1
    first, *middle, finish, usage = chunks
    assert first.choices[0].delta.role == "assistant"
    assert first.model_extra["netaclaw"]["sessionId"] == session_id
    contents = [c.choices[0].delta.content for c in middle]
    assert "".join(contents) == text and len(contents) > 5
    assert all(c.choices[0].finish_reason is None for c in middle)
    assert finish.choices[0].finish_reason == "stop" and not finish.choices[0].delta.content
    assert usage.choices == [] and usage.usage is not None
    assert usage.usage.completion_tokens == 33
    assert usage.usage.prompt_tokens == default_input_tokens(sent[0])
    # streamed as the model wrote it: the first words came long before the last
    assert arrived[-2] - arrived[1] > 0.5
    assert _history(session_id) == [("user", "讲一讲"), ("assistant", text)]


def test_a_stateless_client_resending_the_history_continues_one_chat(live) -> None:
    """Each call resends the whole conversation: the chat that holds exactly the earlier
    messages goes on, storing only the new one; a different history is a new chat with the
    earlier messages as its history; a named chat ignores the resent history."""
    with ScriptedLLMServer() as llm:
        llm.enqueue(Reply(text="答一"), Reply(text="答二"), Reply(text="另答"), Reply(text="答三"))
        _user, _agent, token = _world(llm)
        client = _client(live, token)
        system = {"role": "system", "content": "Be brief."}  # a front end's own prompt
        one = client.chat.completions.create(
            model="研究助手", messages=[system, {"role": "user", "content": "问一"}]
        )
        sid = one.model_extra["netaclaw"]["sessionId"]
        conversation = [
            system,
            {"role": "user", "content": "问一"},
            {"role": "assistant", "content": "答一"},
            {"role": "user", "content": "问二"},
        ]
        two = client.chat.completions.create(model="研究助手", messages=conversation)
        edited = [
            *conversation[:2],
            {"role": "assistant", "content": "改过的答案"},
            conversation[3],
        ]
        forked = client.chat.completions.create(model="研究助手", messages=edited)
        named = client.chat.completions.create(
            model="研究助手",
            messages=[
                {"role": "user", "content": "早就不同的历史"},
                {"role": "user", "content": "问三"},
            ],
            extra_headers={"X-NetaClaw-Session": sid},
        )
        sent = _chat_requests(llm)
    assert two.model_extra["netaclaw"] == {"sessionId": sid, "createdChat": False}
    assert named.model_extra["netaclaw"] == {"sessionId": sid, "createdChat": False}
    assert _history(sid) == [
        ("user", "问一"),
        ("assistant", "答一"),
        ("user", "问二"),
        ("assistant", "答二"),
        ("user", "问三"),
        ("assistant", "答三"),
    ]
    fork = forked.model_extra["netaclaw"]
    assert fork["createdChat"] is True and fork["sessionId"] != sid
    assert _history(fork["sessionId"]) == [
        ("user", "问一"),
        ("assistant", "改过的答案"),
        ("user", "问二"),
        ("assistant", "另答"),
    ]
    # the model saw each message once: the second call's request is the chat's history
    texts = [m.get("content") for m in sent[1]["messages"]]
    assert texts == ["You help.", "Be brief.", "问一", "答一", "问二"]
    assert [m.get("content") for m in sent[3]["messages"]][-2:] == ["答二", "问三"]


def test_a_tool_using_turn_streams_every_step_and_its_chat_is_recognised_next_time(live) -> None:
    call = ToolCall("call_1", "write_file", json.dumps({"path": "notes/a.txt", "content": "hi"}))
    with ScriptedLLMServer() as llm:
        llm.enqueue(
            Reply(text="我先写文件。", tool_calls=[call], input_tokens=300, output_tokens=20),
            Reply(text="写好了 notes/a.txt。", chunk_size=3, input_tokens=350, output_tokens=9),
            Reply(text="文件里是 hi。"),
        )
        _user, _agent, token = _world(llm)
        client = _client(live, token)
        stream = client.chat.completions.create(
            model="研究助手",
            messages=[{"role": "user", "content": "写一个文件"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        sid = chunks[0].model_extra["netaclaw"]["sessionId"]
        follow = client.chat.completions.create(
            model="研究助手",
            messages=[
                {"role": "user", "content": "写一个文件"},
                {"role": "assistant", "content": content},
                {"role": "user", "content": "里面是什么？"},
            ],
        )
        sent = _chat_requests(llm)
    assert content == "我先写文件。\n\n写好了 notes/a.txt。"
    usage = chunks[-1].usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens) == (650, 29)  # both steps
    tool = Message.objects.get(session_id=sid, role=Role.TOOL)
    assert tool.tool_call_id == "call_1" and tool.content.startswith("wrote 2 bytes")
    assert sent[1]["messages"][-1]["role"] == "tool"
    assert follow.model_extra["netaclaw"]["sessionId"] == sid
    assert follow.choices[0].message.content == "文件里是 hi。"
    assert Message.objects.filter(session_id=sid, role=Role.USER).count() == 2


def test_a_compaction_during_the_turn_and_the_answer_still_streams(live) -> None:
    """A stateless client's long history starts a chat over the agent's threshold: the
    turn compacts it first, then answers; usage counts the agent's model, not the
    summary's."""
    with ScriptedLLMServer() as llm:
        llm.responder = lambda body, wire: (
            Reply(text=SUMMARY) if is_summary_request(body) else Reply(text="接着修。")
        )
        _user, _agent, token = _world(llm, window=6000)
        history: list[dict[str, str]] = []
        for i in range(40):
            role = "user" if i % 2 == 0 else "assistant"
            history.append({"role": role, "content": f"第 {i} 轮 src/parser.py " + "内容" * 200})
        stream = _client(live, token).chat.completions.create(
            model="研究助手",
            messages=[*history, {"role": "user", "content": "继续修 bug"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        chat = [r.body for r in llm.requests if not is_summary_request(r.body)]
    sid = chunks[0].model_extra["netaclaw"]["sessionId"]
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "接着修。"
    record = CompactionRecord.objects.get(session_id=sid)
    assert (record.status, record.trigger) == ("done", "auto")
    sent = json.dumps(chat[-1], ensure_ascii=False)
    assert "[CONTEXT COMPACTION]" in sent and "第 5 轮" not in sent
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.prompt_tokens == default_input_tokens(chat[-1])
    assert len(_history(sid)) == 42  # every original is kept (compacted, not deleted)


def test_another_users_agent_or_chat_is_not_found(live) -> None:
    with ScriptedLLMServer() as llm:
        user, agent, token = _world(llm)
        other = make_user()
        theirs = make_agent(name="别人的助手", owner=other, model_channel=agent.model_channel)
        their_chat = make_session(owner=other, agent=theirs)
        mine_elsewhere = make_session(owner=user, agent=make_agent(name="另一个", owner=user))
        client = _client(live, token)
        for model in ("别人的助手", str(theirs.pk), "没有这个助手"):
            with pytest.raises(openai.NotFoundError) as found:
                client.chat.completions.create(
                    model=model, messages=[{"role": "user", "content": "你好"}]
                )
            assert found.value.body["code"] == "model_not_found"
            assert found.value.body["type"] == "invalid_request_error"
        with pytest.raises(openai.NotFoundError) as found:
            client.chat.completions.create(
                model="研究助手",
                messages=[{"role": "user", "content": "你好"}],
                extra_body={"netaclaw": {"sessionId": str(their_chat.pk)}},
            )
        assert found.value.body["code"] == "session_not_found"
        with pytest.raises(openai.BadRequestError) as wrong:
            client.chat.completions.create(
                model="研究助手",
                messages=[{"role": "user", "content": "你好"}],
                extra_headers={"X-NetaClaw-Session": str(mine_elsewhere.pk)},
            )
        assert wrong.value.body["code"] == "model_mismatch"
        assert llm.requests == []
    assert not Message.objects.exists()
    assert ChatSession.objects.count() == 2


def test_a_bad_or_expired_token_is_401(live) -> None:
    with ScriptedLLMServer() as llm:
        _user, _agent, token = _world(llm)
        with pytest.raises(openai.AuthenticationError) as bad:
            _client(live, "not-a-token").chat.completions.create(
                model="研究助手", messages=[{"role": "user", "content": "你好"}]
            )
        assert bad.value.status_code == 401 and bad.value.body["code"] == "invalid_api_key"
        Token.objects.filter(key=token).update(created=timezone.now() - timedelta(days=31))
        with pytest.raises(openai.AuthenticationError) as expired:
            _client(live, token).models.list()
        assert expired.value.body["code"] == "token_expired"
        # no bearer token at all: a session cookie or the REST API's scheme is not enough
        answer = httpx2.post(
            f"{live.http_url}/v1/chat/completions",
            headers={"Authorization": f"Token {token}"},
            json={"model": "研究助手", "messages": [{"role": "user", "content": "你好"}]},
        )
        assert answer.status_code == 401
        assert answer.json()["error"]["type"] == "authentication_error"
    assert not ChatSession.objects.exists()


def test_a_bad_body_is_400_in_openais_shape(live) -> None:
    with ScriptedLLMServer() as llm:
        _user, _agent, token = _world(llm)
        headers = {"Authorization": f"Bearer {token}"}
        url = f"{live.http_url}/v1/chat/completions"
        cases = [
            ({"model": "研究助手"}, "messages"),
            (
                {"model": "研究助手", "messages": [{"role": "assistant", "content": "x"}]},
                "messages",
            ),
            ({"model": "研究助手", "messages": [{"role": "wizard", "content": "x"}]}, "messages"),
            ({"messages": [{"role": "user", "content": "x"}]}, "model"),
            ({"model": "研究助手", "messages": [{"role": "user", "content": "  "}]}, "messages"),
            (
                {
                    "model": "研究助手",
                    "messages": [{"role": "user", "content": "x"}],
                    "stream": "y",
                },
                "stream",
            ),
        ]
        for body, param in cases:
            answer = httpx2.post(url, headers=headers, json=body)
            assert answer.status_code == 400, body
            error = answer.json()["error"]
            assert error["type"] == "invalid_request_error" and error["param"] == param
            assert set(error) == {"message", "type", "param", "code"}
        not_json = httpx2.post(url, headers=headers, content=b"{not json")
        assert not_json.status_code == 400 and not_json.json()["error"]["code"] == "invalid_json"
        assert httpx2.get(url, headers=headers).status_code == 405
    assert not ChatSession.objects.exists()


def test_a_turn_already_running_in_the_chat_is_409_and_nothing_is_stored(live) -> None:
    with ScriptedLLMServer() as llm:
        llm.enqueue(Reply(text="慢慢说。" * 20, chunk_size=2, delay_per_chunk=0.1))  # 4 s
        user, agent, token = _world(llm)
        session = make_session(owner=user, agent=agent)
        client = _client(live, token)
        named = {"X-NetaClaw-Session": str(session.pk)}
        stream = client.chat.completions.create(
            model="研究助手",
            messages=[{"role": "user", "content": "第一个"}],
            stream=True,
            extra_headers=named,
        )
        first = next(iter(stream))
        assert first.choices[0].delta.role == "assistant"
        with pytest.raises(openai.ConflictError) as busy:
            client.chat.completions.create(
                model="研究助手",
                messages=[{"role": "user", "content": "第二个"}],
                extra_headers=named,
            )
        assert busy.value.body["code"] == "turn_in_progress"
        rest = "".join(c.choices[0].delta.content or "" for c in stream)
    assert rest == "慢慢说。" * 20
    assert _history(str(session.pk)) == [("user", "第一个"), ("assistant", "慢慢说。" * 20)]
    assert not Message.objects.filter(content="第二个").exists()


def test_a_provider_failure_is_502_and_the_chat_records_it(live) -> None:
    with ScriptedLLMServer() as llm:
        llm.enqueue(Fail(status=400, body={"error": {"message": "bad things"}}))
        llm.enqueue(Fail(status=400, body={"error": {"message": "bad things"}}))
        _user, _agent, token = _world(llm)
        client = _client(live, token)
        with pytest.raises(openai.APIStatusError) as failed:
            client.chat.completions.create(
                model="研究助手", messages=[{"role": "user", "content": "你好"}]
            )
        assert failed.value.status_code == 502
        assert failed.value.body["code"] == "bad_request"
        assert failed.value.body["type"] == "server_error"
        sid = failed.value.response.headers["x-netaclaw-session"]
        stream = client.chat.completions.create(
            model="研究助手",
            messages=[{"role": "user", "content": "再试"}],
            stream=True,
            extra_headers={"X-NetaClaw-Session": sid},
        )
        with pytest.raises(openai.APIError) as in_stream:
            list(stream)
        assert "HTTP 400" in in_stream.value.message
    records = Message.objects.filter(session_id=sid, metadata__systemType="turn_event")
    assert [r.metadata["status"] for r in records] == ["failed", "failed"]


def test_a_client_that_goes_away_mid_answer_stops_the_turn(live) -> None:
    with ScriptedLLMServer() as llm:
        llm.enqueue(Reply(text="很长的回答。" * 100, chunk_size=2, delay_per_chunk=0.05))
        _user, _agent, token = _world(llm)
        stream = _client(live, token).chat.completions.create(
            model="研究助手", messages=[{"role": "user", "content": "讲很久"}], stream=True
        )
        chunks = iter(stream)
        sid = next(chunks).model_extra["netaclaw"]["sessionId"]
        next(chunks)
        stream.close()
        deadline = time.monotonic() + 20
        stopped = Message.objects.none()
        while time.monotonic() < deadline:
            stopped = Message.objects.filter(session_id=sid, metadata__status="stopped")
            if stopped.exists():
                break
            time.sleep(0.1)
    assert stopped.exists()
    assert ChatSession.objects.get(pk=sid).lease_holder == ""


def test_the_openapi_schema_lists_the_openai_endpoints(live) -> None:
    user = make_user()
    token = Token.objects.create(user=user).key
    answer = httpx2.get(
        f"{live.http_url}/api/schema/?format=json", headers={"Authorization": f"Token {token}"}
    )
    paths = answer.json()["paths"]
    assert set(paths["/v1/chat/completions"]) == {"post"}
    assert set(paths["/v1/models"]) == {"get"}
    operation = paths["/v1/chat/completions"]["post"]
    assert {"409", "502"} <= set(operation["responses"])


def test_concurrent_completions_in_different_chats_each_get_their_own_answer(live) -> None:
    with ScriptedLLMServer() as llm:
        llm.responder = lambda body, wire: Reply(
            text="答：" + body["messages"][-1]["content"], chunk_size=2, delay_per_chunk=0.01
        )
        _user, _agent, token = _world(llm)
        client = _client(live, token)
        answers: dict[int, str] = {}

        def ask(i: int) -> None:
            done = client.chat.completions.create(
                model="研究助手", messages=[{"role": "user", "content": f"问题{i}"}]
            )
            answers[i] = done.choices[0].message.content or ""

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert answers == {i: f"答：问题{i}" for i in range(6)}
    assert ChatSession.objects.count() == 6


def test_an_agent_that_cannot_answer_is_422_and_no_chat_is_left_behind(live) -> None:
    user = make_user()
    make_agent(name="无渠道", owner=user)  # no model channel
    token = Token.objects.create(user=user).key
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        _client(live, token).chat.completions.create(
            model="无渠道",
            messages=[
                {"role": "user", "content": "早先的问题"},
                {"role": "assistant", "content": "早先的回答"},
                {"role": "user", "content": "你好"},
            ],
        )
    assert refused.value.body["code"] == "no_model_channel"
    assert not ChatSession.objects.exists() and not Message.objects.exists()


def test_back_to_back_requests_in_one_chat_are_all_answered(live) -> None:
    """A turn gives its lease back a moment after its last event: the next request, sent at
    once, waits for that instead of being refused."""
    with ScriptedLLMServer() as llm:
        llm.responder = lambda body, wire: Reply(text="答" + body["messages"][-1]["content"])
        user, agent, token = _world(llm)
        session = make_session(owner=user, agent=agent)
        client = _client(live, token)  # no retries: a 409 would fail the test
        named = {"X-NetaClaw-Session": str(session.pk)}
        for i in range(5):
            done = client.chat.completions.create(
                model="研究助手",
                messages=[{"role": "user", "content": f"问{i}"}],
                extra_headers=named,
            )
            assert done.choices[0].message.content == f"答问{i}"
        for i in range(25):  # a stream ends at once with its turn: the tighter case
            stream = client.chat.completions.create(
                model="研究助手",
                messages=[{"role": "user", "content": f"再问{i}"}],
                stream=True,
                extra_headers=named,
            )
            assert "".join(c.choices[0].delta.content or "" for c in stream) == f"答再问{i}"
    assert len(_history(str(session.pk))) == 60


def test_a_chat_whose_lease_comes_back_within_a_second_is_waited_for(live) -> None:
    """The deterministic form of the case above: the chat's lease is held (a turn ending)
    and given back 0.6 s later; the request is answered, not refused."""
    with ScriptedLLMServer() as llm:
        llm.enqueue(Reply(text="等到了。"))
        user, agent, token = _world(llm)
        session = make_session(owner=user, agent=agent)
        client = _client(live, token)
        client.models.list()  # the server is warm: the request is not slow by itself
        assert services.lease_acquire(session_id=session.pk, holder="t/ending", seconds=30)
        timer = threading.Timer(
            0.6, lambda: services.lease_release(session_id=session.pk, holder="t/ending")
        )
        timer.start()
        started = time.monotonic()
        try:
            done = client.chat.completions.create(
                model="研究助手",
                messages=[{"role": "user", "content": "在吗"}],
                extra_headers={"X-NetaClaw-Session": str(session.pk)},
            )
        finally:
            timer.join()
    assert done.choices[0].message.content == "等到了。"
    assert time.monotonic() - started >= 0.6
