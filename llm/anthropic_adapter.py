"""Anthropic Messages API adapter.

Pitfalls of the 2.x SDK this module is written around:

- The SDK sends ``anthropic-version: 2026-10-21``, which rejects ``temperature`` /
  ``top_p`` / ``top_k`` with a 400 ("Extra inputs are not permitted", even at 1.0),
  and ``messages.create`` has no such parameters any more. So a request's
  ``temperature`` is *not* sent on this wire (the scripted test server enforces the
  same rule). ``thinking`` is never sent either.
- The key goes out as ``Authorization: Bearer``; we also send ``x-api-key`` (the API
  prefers it when both are present) so Anthropic-compatible gateways that only read
  ``x-api-key`` keep working.
- The SDK appends ``/v1/messages`` to the base URL itself; a configured ``…/v1`` is
  trimmed so it does not become ``/v1/v1/messages``.
- Without an explicit key the SDK goes looking for one (environment, profile files,
  workload identity); we always pass one.
- Stream events without an ``event:`` line are skipped by the SDK, and read errors
  while a stream is being consumed surface as raw ``httpx2`` errors (a dropped
  connection is ``httpx2.RemoteProtocolError``, not ``APIConnectionError``), and a
  body that is not JSON as a bare ``json.JSONDecodeError`` (both mapped in
  ``errors.py``).
- Roles must alternate and start with ``user``: consecutive same-role messages are
  merged, tool results become ``tool_result`` blocks of a user message (placed first,
  as the API requires), system messages go to the ``system`` parameter.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import closing
from typing import Any

import anthropic

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

DEFAULT_BASE_URL = "https://api.anthropic.com"
MODELS_PAGE = 1000  # the most models one GET /v1/models page may hold
# Sent as the first user turn when a conversation would otherwise open with the
# assistant (an imported or heavily compacted session): the API requires ``user`` first.
LEADING_USER_PLACEHOLDER = "(continuing the conversation)"


# ---------------------------------------------------------------- request building


def arguments_to_input(arguments: str) -> dict[str, Any]:
    """A ToolCall's JSON text as the object ``tool_use.input`` needs.

    Malformed or non-object arguments (possible in imported sessions) are kept
    under ``_raw`` rather than dropped, so the model still sees what was called.
    """
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_raw": arguments}


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    """The wire role and content blocks of one message.

    Blank text is dropped: the API answers 400 to a text block that is empty or only
    whitespace.
    """
    has_text = bool(message.content.strip())
    if message.role == "assistant":
        blocks: list[dict[str, Any]] = []
        if has_text:
            blocks.append({"type": "text", "text": message.content})
        for call in message.tool_calls:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": arguments_to_input(call.arguments),
                }
            )
        return "assistant", blocks
    if message.role == "tool" and message.tool_call_id:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        if has_text:
            block["content"] = message.content
        return "user", [block]
    # user messages, and tool output without a call id (cannot be a tool_result)
    images = [
        {"type": "image", "source": {"type": "base64", "media_type": i.media_type, "data": i.data}}
        for i in message.images
    ]
    return "user", [*images, *([{"type": "text", "text": message.content}] if has_text else [])]


def _tool_results_first(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results = [b for b in blocks if b["type"] == "tool_result"]
    others = [b for b in blocks if b["type"] != "tool_result"]
    return results + others


def to_anthropic_messages(messages: tuple[Message, ...]) -> tuple[str, list[dict[str, Any]]]:
    """(system text, alternating wire messages) for ``messages``."""
    system_parts = [m.content for m in messages if m.role == "system" and m.content.strip()]
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role, blocks = _blocks(message)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    if wire and wire[0]["role"] == "assistant":
        wire.insert(
            0, {"role": "user", "content": [{"type": "text", "text": LEADING_USER_PLACEHOLDER}]}
        )
    for entry in wire:
        if entry["role"] == "user":
            entry["content"] = _tool_results_first(entry["content"])
    return "\n\n".join(system_parts), wire


def to_anthropic_tools(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]


def build_anthropic_params(request: LLMRequest, config: ChannelConfig) -> dict[str, Any]:
    """Keyword arguments for ``messages.create`` (without ``stream``)."""
    system, messages = to_anthropic_messages(request.messages)
    params: dict[str, Any] = {
        "model": config.model,
        "max_tokens": request.max_tokens,
        "messages": messages,
    }
    if system:
        params["system"] = system
    if request.tools:
        params["tools"] = to_anthropic_tools(request.tools)
    # request.temperature is deliberately not sent, nor thinking: see the module docstring.
    return params


def client_kwargs(config: ChannelConfig) -> dict[str, Any]:
    """Constructor arguments for the SDK clients (the key goes to the SDK only)."""
    api_key = config.api_key or "not-set"  # never let the SDK go credential hunting
    base_url = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
    base_url = base_url.removesuffix("/v1")  # the SDK adds /v1/messages itself
    return {
        "api_key": api_key,
        "base_url": base_url,
        "timeout": config.timeout_seconds,
        "max_retries": config.max_retries,
        "default_headers": {"x-api-key": api_key},
    }


def async_client(config: ChannelConfig) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        **client_kwargs(config),
        http_client=anthropic.DefaultAioHttpClient(verify=shared_ssl_context()),
    )


# kept per event loop and channel: model calls reuse keep-alive connections
ASYNC_CLIENTS = AsyncClientPool(async_client)


def sync_client(config: ChannelConfig) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        **client_kwargs(config),
        http_client=anthropic.DefaultHttpxClient(verify=shared_ssl_context()),
    )


# ---------------------------------------------------------------- response parsing


def _input_total(usage: Any) -> int | None:
    """Input tokens including cache reads/writes (what fills the context)."""
    if usage is None or getattr(usage, "input_tokens", None) is None:
        return None
    return (
        usage.input_tokens
        + (getattr(usage, "cache_creation_input_tokens", None) or 0)
        + (getattr(usage, "cache_read_input_tokens", None) or 0)
    )


class AnthropicStreamParser:
    """Turns raw SSE events into our events; pure, so it can be tested without a socket."""

    def __init__(self) -> None:
        self._tools: dict[int, tuple[str, str, list[str], dict[str, Any]]] = {}
        self._input: int | None = None
        self._output: int | None = None
        self._stop: str | None = None
        self._stopped = False

    def feed(self, event: Any) -> list[StreamEvent]:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            usage = getattr(event.message, "usage", None)
            self._input = _input_total(usage)
            self._output = getattr(usage, "output_tokens", None)
        elif kind == "content_block_start":
            block = event.content_block
            block_type = getattr(block, "type", None)
            if block_type == "tool_use":
                initial = getattr(block, "input", None) or {}
                self._tools[event.index] = (block.id, block.name, [], initial)
            elif block_type == "text" and getattr(block, "text", None):
                return [TextDelta(block.text)]  # gateways that open a block with text
        elif kind == "content_block_delta":
            delta = event.delta
            delta_type = getattr(delta, "type", None)
            if delta_type == "text_delta" and delta.text:
                return [TextDelta(delta.text)]
            if delta_type == "input_json_delta" and event.index in self._tools:
                self._tools[event.index][2].append(delta.partial_json or "")
        elif kind == "content_block_stop":
            if event.index in self._tools:
                return [self._ready(event.index)]
        elif kind == "message_delta":
            self._stop = getattr(event.delta, "stop_reason", None) or self._stop
            usage = getattr(event, "usage", None)
            output = getattr(usage, "output_tokens", None)
            if output is not None:
                self._output = output
            total = _input_total(usage)
            if total is not None:  # cumulative; never let a partial figure lower it
                self._input = max(self._input or 0, total)
        elif kind == "message_stop":
            self._stopped = True
        return []

    def _ready(self, index: int) -> ToolCallReady:
        call_id, name, parts, initial = self._tools.pop(index)
        arguments = "".join(parts) or (json.dumps(initial, ensure_ascii=False) if initial else "{}")
        return ToolCallReady(ToolCall(id=call_id, name=name, arguments=arguments))

    def finish(self) -> list[StreamEvent]:
        """The closing events; a stream without message_delta or message_stop was cut."""
        if self._stop is None and self._stopped:
            self._stop = "end_turn"  # a gateway that sends message_stop only
        if self._stop is None:
            raise LLMError(
                "invalid_response",
                "The model provider's stream ended before the message was complete.",
                provider="anthropic",
            )
        events: list[StreamEvent] = [self._ready(i) for i in sorted(self._tools)]
        if self._input is not None or self._output is not None:
            events.append(UsageReport(self._input or 0, self._output or 0))
        events.append(StreamEnd(self._stop))
        return events


def parse_anthropic_message(message: Any) -> Completion:
    """A non-streamed ``Message`` as a Completion; anything else is invalid_response."""
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        raise LLMError(
            "invalid_response",
            "The model provider's response has no content.",
            provider="anthropic",
        )
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text or "")
        elif kind == "tool_use":
            calls.append(
                ToolCall(
                    id=block.id,
                    name=block.name,
                    arguments=json.dumps(block.input or {}, ensure_ascii=False),
                )
            )
    usage = getattr(message, "usage", None)
    report = None
    if _input_total(usage) is not None:
        report = UsageReport(_input_total(usage) or 0, getattr(usage, "output_tokens", 0) or 0)
    return Completion(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=report,
        stop_reason=getattr(message, "stop_reason", None) or "end_turn",
    )


# ---------------------------------------------------------------- the provider


class AnthropicProvider:
    """Provider for ``provider="anthropic"`` channels.

    Streamed calls take their client from ``ASYNC_CLIENTS`` (one per event loop and
    channel, see ``transport``); blocking calls, rare, make one per call.
    """

    def __init__(self, config: ChannelConfig) -> None:
        self.config = config

    def _translate(self) -> Any:
        return translate_errors(api_key=self.config.api_key, provider="anthropic")

    async def stream(self, request: LLMRequest) -> AsyncGenerator[StreamEvent]:
        params = build_anthropic_params(request, self.config)
        parser = AnthropicStreamParser()
        with self._translate():
            async with ASYNC_CLIENTS.client(self.config) as client:
                events = await client.messages.create(**params, stream=True)
                async with events:
                    async for raw in events:
                        with malformed_is_invalid("anthropic"):
                            parsed = parser.feed(raw)
                        for event in parsed:
                            yield event
            for event in parser.finish():
                yield event

    def complete(self, request: LLMRequest) -> Completion:
        params = build_anthropic_params(request, self.config)
        with self._translate(), sync_client(self.config) as client:
            message = client.messages.create(**params)
            with malformed_is_invalid("anthropic"):
                return parse_anthropic_message(message)

    def _events_sync(self, request: LLMRequest) -> Generator[StreamEvent]:
        """``stream``'s events, read on the blocking client."""
        params = build_anthropic_params(request, self.config)
        parser = AnthropicStreamParser()
        with (
            sync_client(self.config) as client,
            client.messages.create(**params, stream=True) as events,
        ):
            for raw in events:
                with malformed_is_invalid("anthropic"):
                    parsed = parser.feed(raw)
                yield from parsed
        yield from parser.finish()

    def complete_streaming(self, request: LLMRequest, on_text: Callable[[str], None]) -> Completion:
        # closed at once, not when the traceback of an ``on_text`` exception is dropped
        with self._translate(), closing(self._events_sync(request)) as events:
            return collect(events, on_text)

    def list_models(self) -> tuple[str, ...]:
        """``GET /v1/models`` through the SDK's ``models.list()``: one page of up to
        ``MODELS_PAGE`` models (the API's maximum), never a walk through every page."""
        # the SDK parses the page inside list(): a body of [] or null fails there
        with self._translate(), sync_client(self.config) as client:
            with malformed_is_invalid("anthropic"):
                page = client.models.list(limit=MODELS_PAGE)
                return tuple(str(model.id) for model in page.data or ())
