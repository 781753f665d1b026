"""One adapter for the OpenAI Chat Completions wire: openai, deepseek, openai_compatible.

Decisions (tests assert the exact request):

- ``max_tokens``: OpenAI itself gets ``max_completion_tokens`` (its reasoning models
  reject ``max_tokens``, and every current chat model accepts the new name);
  DeepSeek and self-hosted servers (Ollama, vLLM, llama.cpp) get ``max_tokens``,
  the name they all understand.
- ``temperature`` is sent when given, except to OpenAI reasoning models (o1/o3/o4,
  gpt-5*), which reject anything but the default.
- No reasoning parameter is ever sent; reasoning is a property of the chosen model
  (e.g. ``deepseek-reasoner``), and its ``reasoning_content`` deltas are ignored.
- Streams ask for ``stream_options.include_usage``; a missing usage chunk is fine,
  and an ``openai_compatible`` server that rejects ``stream_options`` is asked again
  without it.
- The SDK appends ``/chat/completions`` to the base URL, so OpenAI's base URL ends in
  ``/v1`` and DeepSeek's is the bare host (both documented defaults). The base URL is
  always passed explicitly, so ``OPENAI_BASE_URL`` in the environment cannot
  redirect a channel.
- Tool calls stream as fragments keyed by ``index``: the first carries ``id`` and
  ``name``, later ones only pieces of ``arguments``. A few servers omit ``index``;
  such a fragment with an ``id`` opens a new call, one without continues the last.
- A stream that ends without a ``finish_reason`` (a proxy that closed early without
  chunked framing) is an ``invalid_response``, never a silently truncated answer.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import closing
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from condense.types import Message, ToolCall

from .collect import collect
from .errors import LLMError, malformed_is_invalid, translate_errors
from .transport import AsyncClientPool, shared_ssl_context
from .types import (
    ChannelConfig,
    Completion,
    LLMRequest,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    ToolSpec,
    UsageReport,
)

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "deepseek": "https://api.deepseek.com",
}
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


# ---------------------------------------------------------------- request building


def is_openai_reasoning_model(config: ChannelConfig) -> bool:
    name = config.model.lower().rsplit("/", 1)[-1]
    return config.provider == "openai" and name.startswith(_REASONING_PREFIXES)


def to_openai_message(message: Message) -> dict[str, Any]:
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments or "{}"},
                }
                for call in message.tool_calls
            ],
        }
    if message.role == "tool":
        if message.tool_call_id:
            return {
                "role": "tool",
                "tool_call_id": message.tool_call_id,
                "content": message.content,
            }
        return {"role": "user", "content": message.content}  # an orphan result cannot be "tool"
    if message.role == "user" and message.images:
        parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
        parts += [
            {"type": "image_url", "image_url": {"url": f"data:{i.media_type};base64,{i.data}"}}
            for i in message.images
        ]
        return {"role": "user", "content": parts}
    return {"role": message.role, "content": message.content}


def to_openai_tools(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def build_openai_params(request: LLMRequest, config: ChannelConfig) -> dict[str, Any]:
    """Keyword arguments for ``chat.completions.create`` (without the stream flags)."""
    reasoning = is_openai_reasoning_model(config)
    limit_key = "max_completion_tokens" if config.provider == "openai" else "max_tokens"
    params: dict[str, Any] = {
        "model": config.model,
        "messages": [to_openai_message(m) for m in request.messages],
        limit_key: request.max_tokens,
    }
    if request.temperature is not None and not reasoning:
        params["temperature"] = request.temperature
    if request.tools:
        params["tools"] = to_openai_tools(request.tools)
    return params


def client_kwargs(config: ChannelConfig) -> dict[str, Any]:
    """Constructor arguments for the SDK clients (the key goes to the SDK only).

    The base URL is always explicit so ``OPENAI_BASE_URL`` in the environment cannot
    redirect a channel; an empty key (local servers) becomes a placeholder because the
    SDK refuses to start without one.
    """
    base_url = config.base_url or DEFAULT_BASE_URLS[config.provider]
    return {
        "api_key": config.api_key or "not-set",
        "base_url": base_url.rstrip("/"),
        "timeout": config.timeout_seconds,
        "max_retries": config.max_retries,
    }


def async_client(config: ChannelConfig) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        **client_kwargs(config),
        http_client=openai.DefaultAioHttpClient(verify=shared_ssl_context()),
    )


# kept per event loop and channel: model calls reuse keep-alive connections
ASYNC_CLIENTS = AsyncClientPool(async_client)


def sync_client(config: ChannelConfig) -> openai.OpenAI:
    return openai.OpenAI(
        **client_kwargs(config),
        http_client=openai.DefaultHttpxClient(verify=shared_ssl_context()),
    )


# ---------------------------------------------------------------- response parsing


def normalize_stop_reason(finish_reason: str | None, has_tool_calls: bool) -> str:
    reason = _STOP_REASONS.get(finish_reason or "stop", finish_reason or "end_turn")
    # some local servers say "stop" even when they called a tool
    return "tool_use" if has_tool_calls and reason == "end_turn" else reason


def _usage(usage: Any) -> UsageReport | None:
    if usage is None or getattr(usage, "prompt_tokens", None) is None:
        return None
    return UsageReport(usage.prompt_tokens or 0, getattr(usage, "completion_tokens", 0) or 0)


class OpenAIStreamParser:
    """Assembles streamed chunks; tool calls arrive by index in id/name/argument pieces.

    Chunks are the wire's JSON objects as the SDK decoded them (``AsyncStream[object]``):
    building a ``ChatCompletionChunk`` model of each was a sixth of a call's client CPU,
    for the five fields read here."""

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: str | None = None
        self._usage: UsageReport | None = None

    def feed(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        usage = chunk.get("usage")
        if usage and usage.get("prompt_tokens") is not None:
            self._usage = UsageReport(
                usage["prompt_tokens"] or 0, usage.get("completion_tokens") or 0
            )
        events: list[StreamEvent] = []
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("content"):
                events.append(TextDelta(delta["content"]))
            for piece in delta.get("tool_calls") or []:
                slot = self._slot(piece)
                if piece.get("id") and not slot["id"]:
                    slot["id"] = piece["id"]
                function = piece.get("function")
                if function is not None:
                    if function.get("name") and not slot["name"]:
                        slot["name"] = function["name"]
                    if function.get("arguments"):
                        slot["args"].append(function["arguments"])
            if choice.get("finish_reason"):
                self._finish = choice["finish_reason"]
        return events

    def _slot(self, piece: dict[str, Any]) -> dict[str, Any]:
        """The call a fragment belongs to (by index; by id, or the last call, without one)."""
        index = piece.get("index")
        if index is None:
            known = {slot["id"]: i for i, slot in self._calls.items() if slot["id"]}
            call_id = piece.get("id")
            if call_id in known:
                index = known[call_id]
            elif call_id:
                index = max(self._calls, default=-1) + 1
            else:
                index = max(self._calls, default=0)
        return self._calls.setdefault(index, {"id": None, "name": "", "args": []})

    def finish(self) -> list[StreamEvent]:
        if self._finish is None:
            raise LLMError(
                "invalid_response",
                "The model provider's stream ended without a finish reason.",
                provider=self._provider,
            )
        events: list[StreamEvent] = []
        for index in sorted(self._calls):
            slot = self._calls[index]
            if not slot["name"]:
                raise LLMError(
                    "invalid_response",
                    "The model provider streamed a tool call without a name.",
                    provider=self._provider,
                )
            call = ToolCall(
                id=slot["id"] or f"call_{index}",
                name=slot["name"],
                arguments="".join(slot["args"]) or "{}",
            )
            events.append(ToolCallReady(call))
        if self._usage is not None:
            events.append(self._usage)
        events.append(StreamEnd(normalize_stop_reason(self._finish, bool(self._calls))))
        return events


def parse_openai_completion(completion: Any, provider: str = "openai") -> Completion:
    """A non-streamed ``ChatCompletion`` as a Completion; anything else is invalid_response."""
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise LLMError(
            "invalid_response",
            "The model provider's response has no choices.",
            provider=provider,
        )
    choice = choices[0]
    message = choice.message
    calls = tuple(
        ToolCall(
            id=call.id or f"call_{index}",  # some local servers leave ids out
            name=call.function.name,
            arguments=call.function.arguments or "{}",
        )
        for index, call in enumerate(message.tool_calls or [])
        if getattr(call, "function", None) is not None
    )
    if any(not call.name for call in calls):
        raise LLMError(
            "invalid_response",
            "The model provider returned a tool call without a name.",
            provider=provider,
        )
    return Completion(
        text=message.content or "",
        tool_calls=calls,
        usage=_usage(getattr(completion, "usage", None)),
        stop_reason=normalize_stop_reason(choice.finish_reason, bool(calls)),
    )


# ---------------------------------------------------------------- the provider


def _rejects_stream_options(exc: Exception) -> bool:
    return isinstance(
        exc, openai.BadRequestError | openai.UnprocessableEntityError
    ) and "stream_options" in str(exc)


CHAT_COMPLETIONS = "/chat/completions"


async def _post_streaming(client: openai.AsyncOpenAI, body: dict[str, Any]) -> Any:
    """``chat.completions.create(stream=True)`` without its request transform.

    ``create()`` walks the whole body through the SDK's type-driven transform, which for
    chat requests changes nothing (no aliased keys, no dates) and costs CPU on the event
    loop in proportion to the history: 264 ms for a 1000-message request, against 21 ms
    posted as built (bench.sdk_request; openai/openai-python#3616).
    ``build_openai_params`` already builds the wire format, so the body is posted as it is;
    the SDK still does the authentication, retries, error mapping and SSE parsing.
    """
    return await client.post(
        CHAT_COMPLETIONS,
        body=body,
        cast_to=ChatCompletion,
        stream=True,
        stream_cls=openai.AsyncStream[object],  # the chunks as decoded JSON (the parser's)
    )


def _post_streaming_sync(client: openai.OpenAI, body: dict[str, Any]) -> Any:
    """``_post_streaming`` on the SDK's blocking client (a worker thread's summary)."""
    return client.post(
        CHAT_COMPLETIONS,
        body=body,
        cast_to=ChatCompletion,
        stream=True,
        stream_cls=openai.Stream[object],
    )


class OpenAIProvider:
    """Provider for ``openai``, ``deepseek`` and ``openai_compatible`` channels.

    Streamed calls take their client from ``ASYNC_CLIENTS`` (one per event loop and
    channel, see ``transport``); blocking calls, rare, make one per call.
    """

    def __init__(self, config: ChannelConfig) -> None:
        self.config = config

    def _translate(self) -> Any:
        return translate_errors(api_key=self.config.api_key, provider=self.config.provider)

    async def _open(self, client: openai.AsyncOpenAI, params: dict[str, Any]) -> Any:
        try:
            return await _post_streaming(
                client, {**params, "stream": True, "stream_options": {"include_usage": True}}
            )
        except openai.APIStatusError as exc:
            if self.config.provider == "openai_compatible" and _rejects_stream_options(exc):
                return await _post_streaming(client, {**params, "stream": True})
            raise

    async def stream(self, request: LLMRequest) -> AsyncGenerator[StreamEvent]:
        params = build_openai_params(request, self.config)
        parser = OpenAIStreamParser(self.config.provider)
        with self._translate():
            async with ASYNC_CLIENTS.client(self.config) as client:
                chunks = await self._open(client, params)
                async with chunks:
                    async for chunk in chunks:
                        with malformed_is_invalid(self.config.provider):
                            parsed = parser.feed(chunk)
                        for event in parsed:
                            yield event
            for event in parser.finish():
                yield event

    def complete(self, request: LLMRequest) -> Completion:
        params = build_openai_params(request, self.config)
        with self._translate(), sync_client(self.config) as client:
            completion = client.post(CHAT_COMPLETIONS, body=params, cast_to=ChatCompletion)
            with malformed_is_invalid(self.config.provider):
                return parse_openai_completion(completion, self.config.provider)

    def _open_sync(self, client: openai.OpenAI, params: dict[str, Any]) -> Any:
        try:
            return _post_streaming_sync(
                client, {**params, "stream": True, "stream_options": {"include_usage": True}}
            )
        except openai.APIStatusError as exc:
            if self.config.provider == "openai_compatible" and _rejects_stream_options(exc):
                return _post_streaming_sync(client, {**params, "stream": True})
            raise

    def _events_sync(self, request: LLMRequest) -> Generator[StreamEvent]:
        """``stream``'s events, read on the blocking client."""
        params = build_openai_params(request, self.config)
        parser = OpenAIStreamParser(self.config.provider)
        with sync_client(self.config) as client, self._open_sync(client, params) as chunks:
            for chunk in chunks:
                with malformed_is_invalid(self.config.provider):
                    parsed = parser.feed(chunk)
                yield from parsed
        yield from parser.finish()

    def complete_streaming(self, request: LLMRequest, on_text: Callable[[str], None]) -> Completion:
        # closed at once, not when the traceback of an ``on_text`` exception is dropped
        with self._translate(), closing(self._events_sync(request)) as events:
            return collect(events, on_text)

    def list_models(self) -> tuple[str, ...]:
        """``GET {base_url}/models`` through the SDK's ``models.list()`` (OpenAI, DeepSeek,
        Ollama, vLLM and llama.cpp all serve it)."""
        # the SDK parses the page inside list(): a body of [] or null fails there
        with self._translate(), sync_client(self.config) as client:
            with malformed_is_invalid(self.config.provider):
                page = client.models.list()
                return tuple(str(model.id) for model in page.data or ())
