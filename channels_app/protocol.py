"""Client frames of the WebSocket protocol (CONTRACT §5), parsed and validated.

Pure: takes the raw text, returns a typed frame or raises ProtocolError with the
message and reason the client is told. Each frame class names its ``type``: the consumer
hands the frame to its ``on_<type>`` handler, as Channels hands a ``websocket.receive``
message to ``websocket_receive`` (a ``chat`` frame that starts a chat is a ``new_chat``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from agents.validation import MESSAGE_MAX_CHARS

MAX_CONTENT_CHARS = MESSAGE_MAX_CHARS
MAX_INSTRUCTIONS_CHARS = 2_000


class ProtocolError(ValueError):
    def __init__(self, error: str, reason: str, session_id: str | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.reason = reason
        self.session_id = session_id


@dataclass(frozen=True, slots=True)
class ChatFrame:
    type: ClassVar[str] = "chat"

    session_id: str
    content: str
    # workspace paths of files uploaded for this message (issue 26 item 4)
    attachments: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NewChatFrame:
    """A ``chat`` frame with ``agent`` and no ``sessionId``: the first message of a new chat
    with that agent (the chat is stored with it, never empty; issue 16)."""

    type: ClassVar[str] = "new_chat"

    agent_id: int
    content: str


@dataclass(frozen=True, slots=True)
class CompactFrame:
    type: ClassVar[str] = "compact"

    session_id: str
    instructions: str | None = None
    up_to: int | None = None  # a message id: compact only what comes before it (issue 17)
    preview: bool = False  # write the summary, apply nothing: ``compaction_preview`` (issue 17)


@dataclass(frozen=True, slots=True)
class PreviewAcceptFrame:
    """Apply a previewed compaction (issue 17 item 6), its summary replaced by ``summary``
    when given (an edit, kept in the audit)."""

    type: ClassVar[str] = "preview_accept"

    session_id: str
    preview_id: int
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class PreviewDiscardFrame:
    """Drop a previewed compaction; nothing is applied."""

    type: ClassVar[str] = "preview_discard"

    session_id: str
    preview_id: int


@dataclass(frozen=True, slots=True)
class UndoFrame:
    """Undo a compaction (CONTRACT §7): ``compactionId`` names its record; absent, the
    latest one still in effect."""

    type: ClassVar[str] = "undo"

    session_id: str
    compaction_id: int | None = None


@dataclass(frozen=True, slots=True)
class StopFrame:
    """End the session's running turn or compaction (CONTRACT §5)."""

    type: ClassVar[str] = "stop"

    session_id: str


@dataclass(frozen=True, slots=True)
class RetryFrame:
    """Run the session's last failed or stopped turn again (CONTRACT §5)."""

    type: ClassVar[str] = "retry"

    session_id: str


@dataclass(frozen=True, slots=True)
class ResumeFrame:
    """Join the session's events, the running answer's pieces after ``after_seq`` first
    (CONTRACT §8). ``after_seq`` None: the page's own socket starts after what it has
    stored; a program's, from the first piece (0)."""

    type: ClassVar[str] = "resume"

    session_id: str
    after_seq: int | None = None


@dataclass(frozen=True, slots=True)
class RegenerateFrame:
    """Answer again the user's message an answer of the agent answers; the answer before
    is kept as a version (issue 26 item 1)."""

    type: ClassVar[str] = "regenerate"

    session_id: str
    message_id: int


@dataclass(frozen=True, slots=True)
class EditFrame:
    """Send the user's message ``message_id`` again as ``content``; the earlier one and what
    followed it are kept as a version (issue 26 item 1)."""

    type: ClassVar[str] = "edit"

    session_id: str
    message_id: int
    content: str


@dataclass(frozen=True, slots=True)
class BranchFrame:
    """Make ``version`` of a fork the conversation again (issue 26 item 1)."""

    type: ClassVar[str] = "branch"

    session_id: str
    fork_id: int
    version: int


ClientFrame = (
    ResumeFrame
    | ChatFrame
    | NewChatFrame
    | CompactFrame
    | StopFrame
    | RetryFrame
    | RegenerateFrame
    | EditFrame
    | BranchFrame
    | UndoFrame
    | PreviewAcceptFrame
    | PreviewDiscardFrame
)


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
    return ChatFrame(session_id, _content(data, session_id), _attachments(data, session_id))


MAX_ATTACHMENTS = 20


def _attachments(data: dict[str, Any], session_id: str) -> tuple[str, ...]:
    """``attachments``: the paths the upload answered, at most ``MAX_ATTACHMENTS``."""
    value = data.get("attachments")
    if value is None or value == []:
        return ()
    if (
        not isinstance(value, list)
        or len(value) > MAX_ATTACHMENTS
        or not all(isinstance(p, str) and 0 < len(p) <= 1024 and "\x00" not in p for p in value)
    ):
        raise ProtocolError(
            f"'attachments' must be a list of at most {MAX_ATTACHMENTS} file paths",
            "bad_field",
            session_id,
        )
    return tuple(value)


def _starts_chat(data: dict[str, Any]) -> bool:
    """A ``chat`` frame for a chat not stored yet: ``agent``, and no ``sessionId``."""
    return data.get("type") == "chat" and data.get("sessionId") in (None, "") and "agent" in data


def _parse_new_chat(data: dict[str, Any]) -> NewChatFrame:
    agent = data.get("agent")
    if isinstance(agent, str) and agent.isascii() and agent.isdigit() and len(agent) <= 18:
        agent = int(agent)  # a form's value (the page's ws-send)
    if isinstance(agent, bool) or not isinstance(agent, int) or agent < 1:
        raise ProtocolError("'agent' must be a positive integer (an agent's id)", "bad_field")
    return NewChatFrame(agent_id=agent, content=_content(data, ""))


def _content(data: dict[str, Any], session_id: str) -> str:
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
    return content


def _message_id(data: dict[str, Any], name: str, session_id: str) -> int | None:
    """An optional id field: a positive integer, or its digits (a form's value)."""
    value = data.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 18:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63:
        raise ProtocolError(f"'{name}' must be a positive integer", "bad_field", session_id)
    return value


def _flag(data: dict[str, Any], name: str, session_id: str) -> bool:
    """An optional boolean field: true or false, or a form's "true" / "false" (absent:
    false)."""
    value = data.get(name)
    if value is None or value is False or value == "" or value == "false":
        return False
    if value is True or value == "true":
        return True
    raise ProtocolError(f"'{name}' must be true or false", "bad_field", session_id)


def _parse_compact(data: dict[str, Any], session_id: str) -> CompactFrame:
    up_to = _message_id(data, "upTo", session_id)
    preview = _flag(data, "preview", session_id)
    instructions = data.get("instructions")
    if instructions is None or instructions == "":
        return CompactFrame(session_id=session_id, up_to=up_to, preview=preview)
    if not isinstance(instructions, str):
        raise ProtocolError("'instructions' must be a string", "bad_field", session_id)
    if len(instructions) > MAX_INSTRUCTIONS_CHARS:
        raise ProtocolError(
            f"'instructions' is longer than {MAX_INSTRUCTIONS_CHARS} characters",
            "bad_field",
            session_id,
        )
    _refuse_nul(instructions, "'instructions'", session_id)
    return CompactFrame(
        session_id=session_id,
        instructions=instructions.strip() or None,
        up_to=up_to,
        preview=preview,
    )


def _parse_stop(data: dict[str, Any], session_id: str) -> StopFrame:
    return StopFrame(session_id=session_id)


def _parse_resume(data: dict[str, Any], session_id: str) -> ResumeFrame:
    after = data.get("afterSeq")
    if after is None:
        return ResumeFrame(session_id)
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise ProtocolError("'afterSeq' must be an integer of 0 or more", "bad_field", session_id)
    return ResumeFrame(session_id, after)


def _parse_retry(data: dict[str, Any], session_id: str) -> RetryFrame:
    return RetryFrame(session_id=session_id)


def _required_id(data: dict[str, Any], name: str, session_id: str) -> int:
    value = _message_id(data, name, session_id)
    if value is None:
        raise ProtocolError(f"'{name}' must be a positive integer", "bad_field", session_id)
    return value


def _parse_regenerate(data: dict[str, Any], session_id: str) -> RegenerateFrame:
    return RegenerateFrame(session_id, _required_id(data, "messageId", session_id))


def _parse_edit(data: dict[str, Any], session_id: str) -> EditFrame:
    message_id = _required_id(data, "messageId", session_id)
    return EditFrame(session_id, message_id, _content(data, session_id))


def _parse_branch(data: dict[str, Any], session_id: str) -> BranchFrame:
    fork_id = _required_id(data, "forkId", session_id)
    return BranchFrame(session_id, fork_id, _required_id(data, "version", session_id))


def _parse_undo(data: dict[str, Any], session_id: str) -> UndoFrame:
    return UndoFrame(session_id, _message_id(data, "compactionId", session_id))


def _parse_preview_accept(data: dict[str, Any], session_id: str) -> PreviewAcceptFrame:
    preview_id = _required_id(data, "previewId", session_id)
    summary = data.get("summary")
    if summary is None:
        return PreviewAcceptFrame(session_id, preview_id)
    if not isinstance(summary, str):
        raise ProtocolError("'summary' must be a string", "bad_field", session_id)
    if not summary.strip():
        raise ProtocolError("'summary' is empty", "bad_field", session_id)
    if len(summary) > MAX_CONTENT_CHARS:
        raise ProtocolError(
            f"'summary' is longer than {MAX_CONTENT_CHARS} characters", "bad_field", session_id
        )
    _refuse_nul(summary, "'summary'", session_id)
    return PreviewAcceptFrame(session_id, preview_id, summary)


def _parse_preview_discard(data: dict[str, Any], session_id: str) -> PreviewDiscardFrame:
    return PreviewDiscardFrame(session_id, _required_id(data, "previewId", session_id))


_PARSERS: dict[str, Callable[[dict[str, Any], str], ClientFrame]] = {
    "chat": _parse_chat,
    "compact": _parse_compact,
    "stop": _parse_stop,
    "resume": _parse_resume,
    "retry": _parse_retry,
    "regenerate": _parse_regenerate,
    "edit": _parse_edit,
    "branch": _parse_branch,
    "undo": _parse_undo,
    "preview_accept": _parse_preview_accept,
    "preview_discard": _parse_preview_discard,
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
    if _starts_chat(data):
        return _parse_new_chat(data)
    return parser(data, _session_id(data))
