"""Value types shared by the compaction core, the LLM adapters and the services.

Plain frozen dataclasses, so the core stays pure (no Django, no SDK) and every
layer speaks about messages in one vocabulary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")
_ROLE_OF: dict[str, Role] = {role: role for role in ROLES}


def core_role(value: str) -> Role:
    """A stored role (a plain string in the database) as the core's closed set; a KeyError
    for a role the core does not know, instead of a message it would misread."""
    return _ROLE_OF[value]


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image a user attached, for a model that takes images: its type and its bytes as
    base64 (issue 26 item 4)."""

    media_type: str
    data: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call requested by the assistant; ``arguments`` is JSON text."""

    id: str
    name: str
    arguments: str = "{}"


@dataclass(frozen=True, slots=True)
class Message:
    """A chat message as the LLM sees it.

    ``id`` is the storage id when the message came from the database (None for
    messages the core creates, such as a summary or a placeholder result). ``pinned``:
    the user pinned it, so a compaction keeps it verbatim (``condense.pins``).
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    id: int | None = None
    is_summary: bool = False
    metadata: dict = field(default_factory=dict, compare=False, hash=False)
    pinned: bool = False
    # a user's attached images, sent as images (only to a model that takes them)
    images: tuple[ImagePart, ...] = field(default=(), compare=False, hash=False)


def tool_calls_to_json(tool_calls: Iterable[ToolCall]) -> list[dict[str, str]]:
    """The core's calls as a message row stores them (``tool_calls_from_json`` reads them)."""
    return [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in tool_calls]


def tool_calls_from_json(items: Iterable[Mapping[str, Any]]) -> tuple[ToolCall, ...]:
    """A stored message's ``tool_calls`` (JSON objects) as the core's calls: every field a
    string, a missing one empty."""
    return tuple(
        ToolCall(
            id=str(c.get("id", "")),
            name=str(c.get("name", "")),
            arguments=str(c.get("arguments", "")),
        )
        for c in items
    )
