"""Every failure mode ends as one LLMError with the right reason, on both wires."""

from __future__ import annotations

import socket

import pytest

from condense.types import Message
from llm import ChannelConfig, LLMError, LLMRequest, TextDelta, get_provider
from scripted_llm import (
    Action,
    Disconnect,
    Fail,
    Hang,
    NonJSON,
    Reply,
    ScriptedLLMServer,
    StreamError,
)

WIRES = ["openai", "anthropic"]
REQUEST = LLMRequest(messages=(Message("user", "hi"),), max_tokens=64)
SECRET = "sk-live-0123456789abcdef"


def make_config(server: ScriptedLLMServer, provider: str, **kw: object) -> ChannelConfig:
    defaults: dict[str, object] = {
        "model": "m",
        "api_key": SECRET,
        "base_url": server.base_url_for(provider),
        "timeout_seconds": 3.0,
        "max_retries": 0,
    }
    return ChannelConfig(provider=provider, **{**defaults, **kw})  # type: ignore[arg-type]


async def stream_error(config: ChannelConfig) -> LLMError:
    with pytest.raises(LLMError) as caught:
        async for _ in get_provider(config).stream(REQUEST):
            pass
    return caught.value


def sync_error(config: ChannelConfig) -> LLMError:
    with pytest.raises(LLMError) as caught:
        get_provider(config).complete(REQUEST)
    return caught.value


def assert_no_secret(error: LLMError) -> None:
    for text in (str(error), repr(error), error.message, str(error.args)):
        assert SECRET not in text


CASES: list[tuple[Action, str, int | None]] = [
    (Fail(status=500), "upstream_error", 500),
    (Fail(status=503), "upstream_error", 503),
    (Fail(status=429), "rate_limited", 429),
    (Fail(status=401), "auth_error", 401),
    (Fail(status=403), "auth_error", 403),
    (Fail(status=400), "bad_request", 400),
    (Fail(status=404), "bad_request", 404),
    (NonJSON(), "invalid_response", None),
    (Disconnect(after_events=0), "connection_error", None),
    (Disconnect(after_events=3), "connection_error", None),
]


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(("action", "reason", "status"), CASES)
async def test_stream_failures(
    llm_server: ScriptedLLMServer, wire: str, action: Action, reason: str, status: int | None
) -> None:
    llm_server.enqueue(action)
    error = await stream_error(make_config(llm_server, wire))
    assert (error.reason, error.status) == (reason, status)
    assert error.provider == wire
    assert_no_secret(error)


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(("action", "reason", "status"), CASES)
def test_sync_failures(
    llm_server: ScriptedLLMServer, wire: str, action: Action, reason: str, status: int | None
) -> None:
    llm_server.enqueue(action)
    error = sync_error(make_config(llm_server, wire))
    assert (error.reason, error.status) == (reason, status)
    assert_no_secret(error)


def test_status_error_message_is_readable(llm_server: ScriptedLLMServer) -> None:
    llm_server.enqueue(Fail(status=500))
    error = sync_error(make_config(llm_server, "openai"))
    assert error.message == "The model provider failed (HTTP 500): Scripted failure 500"


@pytest.mark.parametrize("wire", WIRES)
async def test_hang_times_out(llm_server: ScriptedLLMServer, wire: str) -> None:
    llm_server.enqueue(Hang(seconds=5), Hang(seconds=5))
    config = make_config(llm_server, wire, timeout_seconds=0.3)
    assert (await stream_error(config)).reason == "timeout"
    assert sync_error(config).reason == "timeout"


@pytest.mark.parametrize("wire", WIRES)
async def test_hang_mid_stream_times_out(llm_server: ScriptedLLMServer, wire: str) -> None:
    llm_server.enqueue(Reply(text="abc", chunk_size=1, delay_per_chunk=5))
    config = make_config(llm_server, wire, timeout_seconds=0.3)
    assert (await stream_error(config)).reason == "timeout"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("wire", WIRES)
async def test_refused_connection(wire: str) -> None:
    base = f"http://127.0.0.1:{closed_port()}"
    config = ChannelConfig(
        provider=wire,  # type: ignore[arg-type]
        model="m",
        api_key=SECRET,
        base_url=base + ("/v1" if wire == "openai" else ""),
        max_retries=0,
        timeout_seconds=3,
    )
    assert (await stream_error(config)).reason == "connection_error"
    assert sync_error(config).reason == "connection_error"


@pytest.mark.parametrize("wire", WIRES)
async def test_key_echoed_by_upstream_is_redacted(llm_server: ScriptedLLMServer, wire: str) -> None:
    body = {"error": {"type": "authentication_error", "message": f"Incorrect API key: {SECRET}"}}
    llm_server.enqueue(Fail(status=401, body=body), Fail(status=401, body=body))
    for error in (
        await stream_error(make_config(llm_server, wire)),
        sync_error(make_config(llm_server, wire)),
    ):
        assert error.reason == "auth_error"
        assert "Incorrect API key: ***" in error.message
        assert_no_secret(error)


@pytest.mark.parametrize("wire", WIRES)
async def test_no_retries_when_max_retries_is_zero(
    llm_server: ScriptedLLMServer, wire: str
) -> None:
    llm_server.enqueue(Fail(status=500), Reply(text="would be a retry"))
    await stream_error(make_config(llm_server, wire))
    assert len(llm_server.requests) == 1


async def test_openai_compatible_falls_back_without_stream_options(
    llm_server: ScriptedLLMServer,
) -> None:
    rejection = {"error": {"message": "Unrecognized request argument supplied: stream_options"}}
    llm_server.enqueue(Fail(status=400, body=rejection), Reply(text="fine"))
    config = make_config(llm_server, "openai_compatible", base_url=llm_server.openai_base_url)
    events = [event async for event in get_provider(config).stream(REQUEST)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "fine"
    first, second = llm_server.requests
    assert first.body["stream_options"] == {"include_usage": True}
    assert "stream_options" not in second.body and second.body["stream"] is True


async def test_openai_itself_does_not_fall_back(llm_server: ScriptedLLMServer) -> None:
    rejection = {"error": {"message": "Unrecognized request argument supplied: stream_options"}}
    llm_server.enqueue(Fail(status=400, body=rejection))
    assert (await stream_error(make_config(llm_server, "openai"))).reason == "bad_request"
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("overloaded_error", "upstream_error"),
        ("rate_limit_error", "rate_limited"),
        ("api_error", "upstream_error"),
    ],
)
async def test_error_event_inside_a_200_stream(
    llm_server: ScriptedLLMServer, wire: str, kind: str, reason: str
) -> None:
    llm_server.enqueue(StreamError(kind=kind, message="Busy, try later"))
    error = await stream_error(make_config(llm_server, wire))
    assert (error.reason, error.status) == (reason, None)
    assert "Busy, try later" in error.message


@pytest.mark.parametrize("wire", WIRES)
def test_error_kind_on_a_non_streamed_request_is_an_http_status(
    llm_server: ScriptedLLMServer, wire: str
) -> None:
    llm_server.enqueue(StreamError(kind="overloaded_error"))
    error = sync_error(make_config(llm_server, wire))
    assert (error.reason, error.status) == ("upstream_error", 529)
