"""The OpenAI chat-completions wire of NetaClaw's agents (CONTRACT §8): the request as it
is read, the answers as they are written, the errors in OpenAI's shape. Pure: no database,
no channel layer (``web.openai_chats`` and ``web.openai_turns`` do those).

A request names an agent as its ``model`` and sends ``messages``; the last one is the
user's message the agent answers, the earlier ones are the conversation so far as the
client keeps it (``web.openai_chats`` decides what they mean for the chat).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents import reasons
from agents.message_format import MessageFormatError, parse_openai_messages
from agents.validation import MESSAGE_MAX_CHARS

# The longest user message, as the socket's chat frame (CONTRACT §5) takes it.
MAX_CONTENT_CHARS = MESSAGE_MAX_CHARS

# The header and the body field that name the chat a request continues, and the header
# every answer names its chat in.
SESSION_HEADER = "X-NetaClaw-Session"
EXTENSION_FIELD = "netaclaw"

# OpenAI's roles; ``developer`` is the newer name of ``system`` (stored as system).
_ROLE_ALIASES = {"developer": "system"}

# Between the texts of one turn's model steps (text before a tool call, then the answer):
# streamed and non-streamed answers alike, and the same join when a stateless client's
# resent history is compared with the chat (``conversation_of``).
STEP_SEPARATOR = "\n\n"


class OpenAIError(Exception):
    """An answer in OpenAI's error shape: ``{"error": {"message", "type", "param",
    "code"}}`` with ``status``."""

    def __init__(self, status: int, code: str, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.param = param

    @property
    def type(self) -> str:
        """OpenAI's error types: the client's fault, or the server's."""
        if self.status == 401:
            return "authentication_error"
        return "invalid_request_error" if self.status < 500 else "server_error"

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


# Reasons a turn can end with (``agents.reasons``) whose status here is not
# ``reasons.http_status``'s: the agent must be set up first (422), the runner stopped under
# the turn (503: it is answered again by itself), a turn runs in the chat (409).
_STATUS_OF_REASON = {
    "no_model_channel": 422,
    "system_prompt_too_long": 422,
    "interrupted": 503,
    "turn_in_progress": 409,
    "timeout": 504,
}


def error_for_reason(reason: str | None, message: str) -> OpenAIError:
    """A turn that failed or was refused, with the reason the socket's ``error`` event
    names: a provider's failure is 502 (``agents.reasons``), and so on."""
    code = reason or "internal_error"
    status = _STATUS_OF_REASON.get(code) or reasons.http_status(code)
    return OpenAIError(status, code, message or code)


def bad_request(
    message: str, *, param: str | None = None, code: str = "invalid_body"
) -> OpenAIError:
    return OpenAIError(400, code, message, param=param)


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """What a ``POST /v1/chat/completions`` asks for, checked."""

    model: str
    content: str  # the last user message: what the agent answers
    earlier: tuple[dict[str, Any], ...] = ()  # the rows before it (``parse_openai_messages``)
    stream: bool = False
    include_usage: bool = False  # ``stream_options.include_usage``: a usage chunk at the end
    session_id: str | None = None  # the chat it continues, when it names one

    @property
    def exchanges(self) -> tuple[tuple[str, str], ...]:
        """The earlier messages as this API shows a conversation (``conversation_of``)."""
        return conversation_of(self.earlier)


def parse_completion_request(body: Any, *, header_session: str | None = None) -> CompletionRequest:
    """The request body (decoded JSON) and the ``X-NetaClaw-Session`` header, checked;
    anything wrong is a 400 naming the field. Fields of OpenAI's that do not apply to an
    agent (``temperature``, ``max_tokens``, ``tools``, ``user``…) are ignored."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    model = body.get("model")
    if isinstance(model, int) and not isinstance(model, bool):
        model = str(model)
    if not isinstance(model, str) or not model.strip():
        raise bad_request("'model' must be an agent's name or id", param="model")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise bad_request("'messages' must be a non-empty list", param="messages")
    rows = _rows(raw)
    last = rows[-1]
    if last["role"] != "user":
        raise bad_request("the last message must be the user's", param="messages")
    content = last["content"]
    _check_content(content)
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise bad_request("'stream' must be true or false", param="stream")
    n = body.get("n")
    if n not in (None, 1):
        raise bad_request("only one choice ('n': 1) is answered", param="n")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise bad_request("'stream_options' must be an object", param="stream_options")
    return CompletionRequest(
        model=model.strip(),
        content=content,
        earlier=tuple(rows[:-1]),
        stream=stream,
        include_usage=bool(options.get("include_usage")) and stream,
        session_id=_session_named(body, header_session),
    )


def _rows(raw: list[Any]) -> list[dict[str, Any]]:
    """The messages as stored rows (the import's format, ``agents.transfer``)."""
    messages = []
    for item in raw:
        if isinstance(item, dict) and item.get("role") in _ROLE_ALIASES:
            item = {**item, "role": _ROLE_ALIASES[item["role"]]}
        messages.append(item)
    try:
        return parse_openai_messages(messages)
    except MessageFormatError as exc:
        raise bad_request(str(exc), param="messages") from None
    except RecursionError:
        raise bad_request("a message is nested too deeply", param="messages") from None


def _check_content(content: str) -> None:
    """The user's message, as the socket checks a chat frame's."""
    if not content.strip():
        raise bad_request("the last user message is empty", param="messages", code="empty_message")
    if "\x00" in content:
        raise bad_request(
            "the message contains a NUL character, which cannot be stored",
            param="messages",
            code="invalid_characters",
        )
    if len(content) > MAX_CONTENT_CHARS:
        raise bad_request(
            f"the message is longer than {MAX_CONTENT_CHARS} characters",
            param="messages",
            code="message_too_long",
        )


def _session_named(body: dict[str, Any], header: str | None) -> str | None:
    """The chat named by the header or by ``netaclaw.sessionId`` (the same one if both)."""
    extension = body.get(EXTENSION_FIELD)
    named: Any = None
    if extension is not None:
        if not isinstance(extension, dict):
            raise bad_request(f"'{EXTENSION_FIELD}' must be an object", param=EXTENSION_FIELD)
        named = extension.get("sessionId")
        if named is not None and (not isinstance(named, str) or not named.strip()):
            raise bad_request(
                f"'{EXTENSION_FIELD}.sessionId' must be a chat's id",
                param=f"{EXTENSION_FIELD}.sessionId",
            )
    header = (header or "").strip() or None
    named = named.strip() if isinstance(named, str) else None
    if header and named and header != named:
        raise bad_request(
            f"the {SESSION_HEADER} header and '{EXTENSION_FIELD}.sessionId' name different chats",
            param=f"{EXTENSION_FIELD}.sessionId",
        )
    return header or named


def conversation_of(rows: Iterable[Mapping[str, Any]]) -> tuple[tuple[str, str], ...]:
    """A conversation as a client of this API sees it: each user message, and each
    assistant reply as one text (its steps' texts joined by ``STEP_SEPARATOR``); tool
    calls, tool results and system messages are not part of it. Texts are stripped, so a
    client that trims what it shows still matches."""
    out: list[tuple[str, str]] = []
    steps: list[str] = []

    def close_reply() -> None:
        if steps:
            out.append(("assistant", STEP_SEPARATOR.join(steps).strip()))
            steps.clear()

    for row in rows:
        role, text = row.get("role"), str(row.get("content") or "")
        if role == "user":
            close_reply()
            out.append(("user", text.strip()))
        elif role == "assistant":
            if text.strip():
                steps.append(text)
            elif not steps and not row.get("tool_calls"):
                steps.append("")  # an empty answer is still an answer
    close_reply()
    return tuple(out)


# --- answers ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Usage:
    """The provider's usage of the turn's model calls (every step's, added up)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


@dataclass(frozen=True, slots=True)
class Answer:
    """Where an answer's objects come from: one per request."""

    model: str
    session_id: str
    created_chat: bool
    id: str = field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex}")
    created: int = field(default_factory=lambda: int(time.time()))

    def extension(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "createdChat": self.created_chat}

    def completion(self, content: str, finish_reason: str, usage: Usage) -> dict[str, Any]:
        """A ``chat.completion`` object."""
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": usage.to_json(),
            EXTENSION_FIELD: self.extension(),
        }

    def chunk(
        self,
        delta: dict[str, Any],
        finish_reason: str | None = None,
        *,
        extension: bool = False,
    ) -> dict[str, Any]:
        """A ``chat.completion.chunk`` with one choice."""
        data: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [
                {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
            ],
        }
        if extension:
            data[EXTENSION_FIELD] = self.extension()
        return data

    def usage_chunk(self, usage: Usage) -> dict[str, Any]:
        """The last chunk of ``stream_options.include_usage``: no choice, the usage."""
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage.to_json(),
        }


def sse(data: Mapping[str, Any] | str) -> bytes:
    """One server-sent event: ``data: <json>`` (or the text, ``[DONE]``) and a blank line."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {text}\n\n".encode()


SSE_DONE = sse("[DONE]")
SSE_KEEPALIVE = b": keep-alive\n\n"  # a comment: clients skip it, proxies see traffic


def models_list(ids: Sequence[str]) -> dict[str, Any]:
    """``GET /v1/models``: the agents the token's user may use, by the ``model`` that
    names each one."""
    return {
        "object": "list",
        "data": [{"id": id, "object": "model", "created": 0, "owned_by": "netaclaw"} for id in ids],
    }
