from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from channels_app.protocol import (
    ChatFrame,
    CompactFrame,
    ProtocolError,
    parse_client_frame,
)

SID = "7d1c1c9e-8e0e-4f57-9a55-1f3f9f2b3c4d"


def parse(obj: object, max_bytes: int = 10_000):
    return parse_client_frame(json.dumps(obj), max_bytes=max_bytes)


def test_chat_frame() -> None:
    assert parse({"type": "chat", "sessionId": SID, "content": "你好"}) == ChatFrame(SID, "你好")


def test_compact_frame_with_and_without_instructions() -> None:
    assert parse({"type": "compact", "sessionId": SID}) == CompactFrame(SID, None)
    frame = parse({"type": "compact", "sessionId": SID, "instructions": " keep paths "})
    assert frame == CompactFrame(SID, "keep paths")


def test_htmx_headers_are_ignored() -> None:
    frame = parse(
        {"type": "chat", "sessionId": SID, "content": "hi", "HEADERS": {"HX-Request": "true"}}
    )
    assert frame == ChatFrame(SID, "hi")


@pytest.mark.parametrize(
    ("raw", "reason", "message"),
    [
        ("{not json", "bad_json", "the frame is not valid JSON"),
        ("[1, 2]", "bad_frame", "a frame must be a JSON object"),
        (
            '{"type": "dance"}',
            "unknown_type",
            "unknown frame type 'dance'; expected one of: chat, compact, stop, resume, retry, regenerate, edit, branch, undo, preview_accept, preview_discard",
        ),
        (
            '{"content": "x"}',
            "unknown_type",
            "unknown frame type None; expected one of: chat, compact, stop, resume, retry, regenerate, edit, branch, undo, preview_accept, preview_discard",
        ),
        ('{"type": "chat", "content": "x"}', "bad_field", "'sessionId' must be a non-empty string"),
        (
            '{"type": "chat", "sessionId": 5, "content": "x"}',
            "bad_field",
            "'sessionId' must be a non-empty string",
        ),
        (
            f'{{"type": "chat", "sessionId": "{SID}", "content": 3}}',
            "bad_field",
            "'content' must be a string",
        ),
        (
            f'{{"type": "chat", "sessionId": "{SID}", "content": "  "}}',
            "empty_message",
            "the message is empty",
        ),
        (
            f'{{"type": "compact", "sessionId": "{SID}", "instructions": 1}}',
            "bad_field",
            "'instructions' must be a string",
        ),
    ],
)
def test_bad_frames_have_exact_errors(raw: str, reason: str, message: str) -> None:
    with pytest.raises(ProtocolError) as info:
        parse_client_frame(raw, max_bytes=10_000)
    assert (info.value.reason, info.value.error) == (reason, message)


def test_oversized_and_binary_frames() -> None:
    big = json.dumps({"type": "chat", "sessionId": SID, "content": "汉" * 400})
    with pytest.raises(ProtocolError) as info:
        parse_client_frame(big, max_bytes=1000)  # 400 chars but 1200+ bytes
    assert info.value.reason == "frame_too_large"
    with pytest.raises(ProtocolError) as info:
        parse_client_frame(None, max_bytes=1000)
    assert info.value.reason == "binary_frame"


def test_deeply_nested_json_is_a_clear_error() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_client_frame("[" * 100_000 + "]" * 100_000, max_bytes=10**7)
    assert info.value.reason in {"bad_json", "bad_frame"}


@given(st.text(max_size=300))
def test_any_text_either_parses_or_raises_protocol_error(text: str) -> None:
    try:
        frame = parse_client_frame(text, max_bytes=1000)
    except ProtocolError as exc:
        assert exc.reason and exc.error
    else:
        assert isinstance(frame, ChatFrame | CompactFrame)


@given(
    st.dictionaries(
        st.sampled_from(["type", "sessionId", "content", "instructions", "HEADERS", "x"]),
        st.one_of(
            st.none(), st.integers(), st.text(max_size=20), st.lists(st.integers(), max_size=3)
        ),
    )
)
def test_any_json_object_either_parses_or_raises_protocol_error(obj: dict) -> None:
    try:
        frame = parse(obj)
    except ProtocolError as exc:
        assert exc.reason in {"bad_field", "unknown_type", "empty_message"}
    else:
        assert frame.session_id == obj["sessionId"].strip()


def test_lone_surrogates_are_refused_before_they_reach_the_database() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_client_frame(
            '{"type": "chat", "sessionId": "' + SID + '", "content": "a\\udfff"}', max_bytes=1000
        )
    assert (info.value.reason, info.value.error) == (
        "bad_json",
        "the frame contains invalid Unicode",
    )
