"""Value types shared by the compaction core, the LLM adapters and the services.

Plain frozen dataclasses, so the core stays pure (no Django, no SDK) and every
layer speaks about messages in one vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")


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
    the user pinned it, so a compaction keeps it verbatim (``compaction.core.pins``).
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    id: int | None = None
    is_summary: bool = False
    metadata: dict = field(default_factory=dict, compare=False, hash=False)
    pinned: bool = False
