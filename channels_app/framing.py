"""Every frame a socket sends fits the frame limit (issue 14, item 5).

Daphne gives autobahn a 1 MiB limit on WebSocket messages (``--websocket-max-message-size``)
and autobahn holds outgoing messages to it too: a larger one raised ``PayloadExceededError``
and the socket closed with 1011. Client libraries usually refuse to *receive* more than
1 MiB as well (``websockets``' ``max_size``). A legal 200,000-apostrophe chat message came
back on the HTML socket as a 1.2 MB bubble (``'`` → ``&#x27;``); a large model answer or
tool output did the same on the JSON socket.

So a socket never sends a frame over ``NETACLAW["MAX_FRAME_BYTES"]`` (the limit it holds
clients to as well; and never over 512 KiB):

- a large ``delta`` goes out as several ``delta`` frames (the text is the same, in order);
- a large stored message goes out as a preview: its text (content and tool-call arguments)
  cut to ``PREVIEW_CHARS`` characters, flagged ``"truncated": true``, with ``full_url``
  where a program reads the whole message over HTTP (``GET /api/sessions/<id>/messages/
  <message id>/``, behind the same access check); the page fetches it the same way;
- a long error text is cut.

Pure: ``frames`` takes the event and the socket's encoder, and returns the text frames.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from django.urls import reverse

from agents.events import Delta, ServerEvent

logger = logging.getLogger(__name__)

PREVIEW_CHARS = 8_000  # of a large message, what a socket event carries
# The server's frames are at most MAX_FRAME_BYTES and never over this: client libraries
# commonly refuse to receive more than 1 MiB.
OUTGOING_CAP_BYTES = 512 * 1024
# An encoded character takes at most 6 bytes: "&#x27;" in HTML, "\u001f" in JSON.
_BYTES_PER_CHAR = 6
_ENVELOPE_BYTES = 4_096  # the rest of a frame: type, session id, HTML around the text

# The fields of an event that hold a stored message (``MessageStored.message``, the bubble
# of ``CompactionDone`` / ``CompactionFailed``) and are sent as a preview when too large.
_MESSAGE_FIELDS = ("message", "event_message")

Encoder = Callable[[ServerEvent], str]


def outgoing_limit(max_frame_bytes: int) -> int:
    """The largest frame a socket sends, for the configured ``MAX_FRAME_BYTES``."""
    return min(max_frame_bytes, OUTGOING_CAP_BYTES)


def fits(text: str, limit: int) -> bool:
    return len(text) * 4 <= limit or len(text.encode("utf-8", "surrogatepass")) <= limit


def frames(event: ServerEvent, encode: Encoder, limit: int) -> list[str]:
    """``event`` as text frames of at most ``limit`` bytes each."""
    text = encode(event)
    if fits(text, limit):
        return [text]
    if isinstance(event, Delta):
        return _delta_frames(event, encode, limit)
    for chars in (PREVIEW_CHARS, PREVIEW_CHARS // 8, 0):
        smaller = _preview(event, chars)
        if smaller is None:
            break
        text = encode(smaller)
        if fits(text, limit):
            return [text]
    logger.error("a %s event of %d bytes was not sent: it does not fit", event.type, len(text))
    return []


def _delta_frames(event: Delta, encode: Encoder, limit: int) -> list[str]:
    size = max(1, (limit - _ENVELOPE_BYTES) // _BYTES_PER_CHAR)
    pieces = [event.text[i : i + size] for i in range(0, len(event.text), size)]
    out: list[str] = []
    for piece in pieces:
        text = encode(dataclasses.replace(event, text=piece))
        if fits(text, limit) or len(piece) == 1:
            out.append(text)
        else:  # an encoder that grows text more than expected: halve until it fits
            half = len(piece) // 2
            for part in (piece[:half], piece[half:]):
                out += _delta_frames(dataclasses.replace(event, text=part), encode, limit)
    return out


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars] + "…"


def message_preview(message: dict[str, Any], chars: int, session_id: str) -> dict[str, Any]:
    """A stored message (``agents.message_format.message_to_json``'s shape) with its content
    and its tool calls' arguments cut to ``chars`` characters in all; flagged
    ``truncated`` with the URL of the whole message when anything was cut."""
    budget = chars
    preview = dict(message)
    content = str(message.get("content") or "")
    preview["content"] = content[:budget]
    budget -= len(preview["content"])
    truncated = len(content) > len(preview["content"])
    calls = []
    for call in message.get("tool_calls") or ():
        arguments = str(call.get("arguments", ""))
        kept = arguments[: max(budget, 0)]
        budget -= len(kept)
        truncated = truncated or len(kept) < len(arguments)
        calls.append({**call, "arguments": kept})
    if calls:
        preview["tool_calls"] = calls
    if chars == 0:  # the last resort: nothing but what identifies the message
        preview["metadata"] = {}
        truncated = True
    if not truncated:
        return message
    preview["truncated"] = True
    if session_id and message.get("id") is not None:
        preview["full_url"] = reverse("api:session-message", args=[session_id, message["id"]])
    return preview


def _preview(event: ServerEvent, chars: int) -> ServerEvent | None:
    """A smaller form of ``event``: the stored message it carries as a preview, its error
    text cut (None: it has neither)."""
    session_id = str(getattr(event, "session_id", "") or "")
    changes: dict[str, Any] = {}
    for field in dataclasses.fields(event):
        value = getattr(event, field.name)
        if field.name in _MESSAGE_FIELDS and isinstance(value, dict):
            changes[field.name] = message_preview(value, chars, session_id)
        elif field.name == "error" and isinstance(value, str):
            changes[field.name] = _cut(value, max(chars, 200))
    return dataclasses.replace(event, **changes) if changes else None
