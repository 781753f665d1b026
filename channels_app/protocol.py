"""Client frames of the WebSocket protocol (CONTRACT §5), parsed and validated.

Pure: takes the raw text, returns a typed frame or raises ProtocolError with the
message and reason the client is told. The consumer never looks inside a frame.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_CONTENT_CHARS = 200_000
MAX_INSTRUCTIONS_CHARS = 2_000


class ProtocolError(ValueError):
    def __init__(self, error: str, reason: str, session_id: str | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.reason = reason
        self.session_id = session_id


@dataclass(frozen=True, slots=True)
class ChatFrame:
    session_id: str
    content: str


@dataclass(frozen=True, slots=True)
class CompactFrame:
    session_id: str
    instructions: str | None = None


@dataclass(frozen=True, slots=True)
class StopFrame:
    """End the session's running turn or compaction (CONTRACT §5)."""

    session_id: str


@dataclass(frozen=True, slots=True)
class RetryFrame:
    """Run the session's last failed or stopped turn again (CONTRACT §5)."""

    session_id: str


ClientFrame = ChatFrame | CompactFrame | StopFrame | RetryFrame


def _session_id(data: dict[str, Any]) -> str:
    value = data.get("sessionId")
    if not isinstance(value, str) or not value.strip():
        raise ProtocolError("'sessionId' must be a non-empty string", "bad_field")
    return value.strip()


def _refuse_nul(text: str, what: str, session_id: str) -> None:
    """NUL is valid JSON (``"\\u0000"``) but no database stores it (PostgreSQL refuses it)."""
    if "\x00" in text:
        raise ProtocolError(
            f"{what} contains a NUL character, which cannot be stored",
            "invalid_characters",
            session_id,
        )


def _parse_chat(data: dict[str, Any], session_id: str) -> ChatFrame:
    content = data.get("content")
    if not isinstance(content, str):
        raise ProtocolError("'content' must be a string", "bad_field", session_id)
    if not content.strip():
        raise ProtocolError("the message is empty", "empty_message", session_id)
    _refuse_nul(content, "the message", session_id)
    if len(content) > MAX_CONTENT_CHARS:
        raise ProtocolError(
            f"the message is longer than {MAX_CONTENT_CHARS} characters",
            "message_too_long",
            session_id,
        )
    return ChatFrame(session_id=session_id, content=content)


def _parse_compact(data: dict[str, Any], session_id: str) -> CompactFrame:
    instructions = data.get("instructions")
    if instructions is None or instructions == "":
        return CompactFrame(session_id=session_id)
    if not isinstance(instructions, str):
        raise ProtocolError("'instructions' must be a string", "bad_field", session_id)
    if len(instructions) > MAX_INSTRUCTIONS_CHARS:
        raise ProtocolError(
            f"'instructions' is longer than {MAX_INSTRUCTIONS_CHARS} characters",
            "bad_field",
            session_id,
        )
    _refuse_nul(instructions, "'instructions'", session_id)
    return CompactFrame(session_id=session_id, instructions=instructions.strip() or None)


def _parse_stop(data: dict[str, Any], session_id: str) -> StopFrame:
    return StopFrame(session_id=session_id)


def _parse_retry(data: dict[str, Any], session_id: str) -> RetryFrame:
    return RetryFrame(session_id=session_id)


_PARSERS: dict[str, Callable[[dict[str, Any], str], ClientFrame]] = {
    "chat": _parse_chat,
    "compact": _parse_compact,
    "stop": _parse_stop,
    "retry": _parse_retry,
}


def parse_client_frame(text: str | None, *, max_bytes: int) -> ClientFrame:
    """Validate one text frame. ``HEADERS`` (added by htmx's ws extension) is ignored."""
    if text is None:
        raise ProtocolError("only JSON text frames are accepted", "binary_frame")
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise ProtocolError(f"the frame is larger than {max_bytes} bytes", "frame_too_large")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise ProtocolError("the frame is not valid JSON", "bad_json") from None
    if not isinstance(data, dict):
        raise ProtocolError("a frame must be a JSON object", "bad_frame")
    try:  # "\ud800" escapes decode to lone surrogates, which no database can store
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ProtocolError("the frame contains invalid Unicode", "bad_json") from None
    kind = data.get("type")
    parser = _PARSERS.get(kind) if isinstance(kind, str) else None
    if parser is None:
        raise ProtocolError(
            f"unknown frame type {kind!r}; expected one of: {', '.join(_PARSERS)}",
            "unknown_type",
        )
    return parser(data, _session_id(data))
