"""Text every database can store, made from whatever a user, a model or a tool produced.

PostgreSQL refuses NUL in ``text`` and ``\\u0000`` in ``jsonb``; no UTF-8 database (nor the
channel layer, nor a model's HTTP body) takes a lone surrogate, which Python strings can hold
(a file name's undecodable bytes, a ``"\\udcff"`` escape in a model's JSON). The chat's
``tool_call_id`` column holds 200 characters, and providers send longer ids.

These functions make such values storable, deterministically and idempotently: NUL becomes
U+FFFD (the replacement character), a lone surrogate its ``\\udcff`` escape, and a long
tool-call id a shorter one (a prefix of it and a hash of all of it), the same wherever it
is shortened, so an assistant's call and its tool result still pair. ``agents.services``
applies them to every message it writes; the ReAct loop (``agents.runtime``) to what a
model or a tool hands it, so the history it re-sends is the one stored.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

MAX_TOOL_CALL_ID = 200  # agents.models.Message.tool_call_id
_ID_PREFIX = 120
_ID_HASH_CHARS = 32

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _replacement(match: re.Match[str]) -> str:
    char = match.group()
    return "\ufffd" if char == "\x00" else f"\\u{ord(char):04x}"


def has_unstorable(text: str) -> bool:
    """``text`` holds a NUL or a lone surrogate."""
    return _UNSTORABLE.search(text) is not None


def storable_text(text: str) -> str:
    """``text`` with NUL as U+FFFD and each lone surrogate as its ``\\uXXXX`` escape."""
    if not isinstance(text, str) or _UNSTORABLE.search(text) is None:
        return text
    return _UNSTORABLE.sub(_replacement, text)


def storable_json(value: Any) -> Any:
    """A JSON value (dicts, lists, strings, numbers) with every string and key storable."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable_text(str(k)): storable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_json(v) for v in value]
    return value


def storable_call_id(call_id: str) -> str:
    """A tool-call id that fits the column: unchanged when it does, else its first characters
    and a hash of all of it (the same id always becomes the same shorter one)."""
    text = storable_text(call_id or "")
    if len(text) <= MAX_TOOL_CALL_ID:
        return text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:_ID_HASH_CHARS]
    return f"{text[:_ID_PREFIX]}_{digest}"


def storable_tool_call(call: dict[str, Any]) -> dict[str, Any]:
    """One stored tool call (``{"id", "name", "arguments"}``), storable."""
    stored = storable_json(dict(call))
    if "id" in stored:
        stored["id"] = storable_call_id(str(stored["id"]))
    return stored
