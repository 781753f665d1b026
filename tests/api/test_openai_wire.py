"""The OpenAI-compatible API's pure parts (issue 26 item 9): the request as it is read,
a conversation as a stateless client's is compared, a turn's events as the answer, and
the listener on the channel layer."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from agents.broadcast import apublish
from agents.events import Delta, ErrorEvent, MessageStored, TokenUpdate, TurnDone
from web.openai_turns import AnswerText, SessionEvents, answer_pieces
from web.openai_wire import (
    OpenAIError,
    conversation_of,
    error_for_reason,
    parse_completion_request,
)

SID = str(uuid.uuid4())


def _body(**extra):
    return {"model": "a", "messages": [{"role": "user", "content": "hi"}], **extra}


def test_the_last_user_message_is_sent_and_the_earlier_ones_are_rows() -> None:
    wanted = parse_completion_request(
        {
            "model": 7,
            "messages": [
                {"role": "developer", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "问"}]},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                {"role": "assistant", "content": "答"},
                {"role": "user", "content": "再问"},
            ],
            "temperature": 0.2,
            "user": "someone",
            "tools": [{"type": "function", "function": {"name": "x"}}],
        }
    )
    assert (wanted.model, wanted.content, wanted.stream, wanted.session_id) == (
        "7",
        "再问",
        False,
        None,
    )
    assert [r["role"] for r in wanted.earlier] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert wanted.earlier[2]["tool_calls"] == [{"id": "c1", "name": "f", "arguments": "{}"}]
    assert wanted.exchanges == (("user", "问"), ("assistant", "答"))


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        ([], None, "invalid_body"),
        ({"messages": [{"role": "user", "content": "x"}]}, "model", "invalid_body"),
        (_body(messages=[]), "messages", "invalid_body"),
        (
            _body(messages=[{"role": "user", "content": "x"}, {"role": "tool"}]),
            "messages",
            "invalid_body",
        ),
        (_body(messages=[{"role": "user", "content": "a\x00b"}]), "messages", "invalid_characters"),
        (
            _body(messages=[{"role": "user", "content": "x" * 200_001}]),
            "messages",
            "message_too_long",
        ),
        (_body(messages=[{"role": "user", "content": "\n "}]), "messages", "empty_message"),
        (_body(n=2), "n", "invalid_body"),
        (_body(stream=1), "stream", "invalid_body"),
        (_body(netaclaw="x"), "netaclaw", "invalid_body"),
        (_body(netaclaw={"sessionId": 5}), "netaclaw.sessionId", "invalid_body"),
    ],
)
def test_a_bad_request_is_a_400_naming_its_field(body, param, code) -> None:
    with pytest.raises(OpenAIError) as refused:
        parse_completion_request(body)
    assert (refused.value.status, refused.value.param, refused.value.code) == (400, param, code)
    assert refused.value.body()["error"]["type"] == "invalid_request_error"


def test_the_chat_is_named_by_the_header_or_the_extension_field_not_two_different_ones() -> None:
    other = str(uuid.uuid4())
    assert parse_completion_request(_body(), header_session=f" {SID} ").session_id == SID
    named = _body(netaclaw={"sessionId": SID})
    assert parse_completion_request(named).session_id == SID
    assert parse_completion_request(named, header_session=SID).session_id == SID
    with pytest.raises(OpenAIError):
        parse_completion_request(named, header_session=other)


def test_a_conversation_is_user_messages_and_each_reply_as_the_client_received_it() -> None:
    rows = [
        {"role": "system", "content": "prompt"},
        {"role": "user", "content": " 问 "},
        {"role": "assistant", "content": "我先看看。", "tool_calls": [{"id": "c"}]},
        {"role": "tool", "content": "file text"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "d"}]},
        {"role": "tool", "content": "more"},
        {"role": "assistant", "content": "看完了。\n"},
        {"role": "user", "content": "好"},
        {"role": "assistant", "content": ""},
    ]
    assert conversation_of(rows) == (
        ("user", "问"),
        ("assistant", "我先看看。\n\n看完了。"),
        ("user", "好"),
        ("assistant", ""),
    )


def test_reasons_map_to_openai_statuses() -> None:
    assert error_for_reason("upstream_error", "x").status == 502
    assert error_for_reason("bad_request", "x").type == "server_error"
    assert error_for_reason("turn_in_progress", "x").status == 409
    assert error_for_reason("no_model_channel", "x").status == 422
    assert error_for_reason("interrupted", "x").status == 503
    assert error_for_reason("internal_error", "x").status == 500
    assert error_for_reason(None, "").code == "internal_error"


def _assistant(tool_calls: bool) -> MessageStored:
    message = {"role": "assistant", "content": "x"}
    if tool_calls:
        message["tool_calls"] = [{"id": "c", "name": "f", "arguments": "{}"}]
    return MessageStored(SID, message)


def test_the_answer_joins_the_steps_and_drops_a_piece_heard_twice() -> None:
    text = AnswerText()
    events = [
        MessageStored(SID, {"role": "user", "content": "q"}),
        Delta(SID, "我先", "t1", 1),
        Delta(SID, "看看。", "t1", 2),
        Delta(SID, "看看。", "t1", 2),  # heard twice
        _assistant(tool_calls=True),
        MessageStored(SID, {"role": "tool", "content": "r"}),
        Delta(SID, "看完了。", "t1", 3),
        _assistant(tool_calls=False),
    ]
    pieces = [text.take(e) for e in events]
    assert pieces == ["", "我先", "看看。", "", "", "", "\n\n看完了。", ""]
    assert text.end is None
    text.take(TurnDone(SID, turn_id="t1"))
    assert text.end is not None and text.end.finish_reason == "stop" and text.end.error is None
    assert (text.content, text.turn_id) == ("我先看看。\n\n看完了。", "t1")
    assert text.take(Delta(SID, "later", "t2", 1)) == ""


def test_a_tool_call_before_any_text_adds_no_separator() -> None:
    text = AnswerText()
    text.take(_assistant(tool_calls=True))
    assert text.take(Delta(SID, "答", "t", 1)) == "答"


def test_how_a_turn_ends() -> None:
    limited = AnswerText()
    limited.take(ErrorEvent("step limit", "step_limit", SID))
    limited.take(TurnDone(SID, turn_id="t"))
    assert limited.end is not None and limited.end.finish_reason == "length"

    failed = AnswerText()
    failed.take(ErrorEvent("模型失败 (HTTP 500)", "upstream_error", SID, recorded=True))
    assert failed.end is None  # its turn_done follows
    failed.take(TurnDone(SID, turn_id="t"))
    assert failed.end is not None and failed.end.error is not None
    assert (failed.end.error.status, failed.end.error.message) == (502, "模型失败 (HTTP 500)")

    refused = AnswerText()
    refused.take(ErrorEvent("boom", "internal_error", SID))
    assert refused.end is not None and refused.end.error is not None
    assert refused.end.error.status == 500

    interrupted = AnswerText()
    interrupted.take(TurnDone(SID, turn_id="t", interrupted=True))
    assert interrupted.end is not None and interrupted.end.error is not None
    assert interrupted.end.error.status == 503


@pytest.mark.django_db(transaction=True)
async def test_the_listener_hears_the_sessions_events_and_keeps_the_stream_alive(
    channel_layer,
) -> None:
    events = await SessionEvents.open()
    await asyncio.to_thread(events.join, SID)  # as the database thread joins
    text = AnswerText()
    pieces: list[str | None] = []

    async def listen() -> None:
        async for piece in answer_pieces(events, text, keepalive=0.05, idle=5):
            pieces.append(piece)

    listening = asyncio.ensure_future(listen())
    await asyncio.sleep(0.2)  # silence: keep-alive ticks
    await apublish(SID, Delta(SID, "一", "t", 1), Delta(SID, "二", "t", 2))
    await apublish(SID, TokenUpdate(0, 100, 70, True, 0, 0, 0, session_id=SID))
    await apublish(SID, TurnDone(SID, turn_id="t"))
    await asyncio.wait_for(listening, 5)
    await events.close()
    assert [p for p in pieces if p is not None] == ["一", "二"]
    assert None in pieces
    assert text.end is not None and text.end.error is None
    await apublish(SID, Delta(SID, "没人听", "t2", 1))  # left the group: nothing waits for it


async def test_a_silent_turn_is_given_up(channel_layer) -> None:
    events = await SessionEvents.open()
    text = AnswerText()
    pieces = [p async for p in answer_pieces(events, text, keepalive=0.05, idle=0.2)]
    await events.close()
    assert pieces and set(pieces) == {None}
    assert text.end is not None and text.end.error is not None
    assert (text.end.error.status, text.end.error.code) == (504, "timeout")
