"""Files a user attaches to a chat message (issue 26 item 4).

An upload goes straight into the chat's workspace, under ``attachments/``, through the
workspace's one writer (``Workspace.write_bytes``): the workspace's quota, folder and
depth limits hold for it as for the agent's own files, and a file over a limit writes
nothing. The message then names what it carries (``metadata.attachments``: name, path,
size, type) and the agent is told in that message — where each file is and what it is —
so its file tools can read it; an image goes to the model as an image too when the chat's
model takes images (``llm.vision``).
"""

from __future__ import annotations

import mimetypes
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings

from agents.models import ChatSession
from agents.tools.registry import ToolError
from agents.tools.workspace import Workspace, session_workspace_root

FOLDER = "attachments"
MAX_PER_MESSAGE = 20
MAX_NAME_CHARS = 120
_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\:*?\"<>|]+")


class AttachmentRefused(Exception):
    """``reason`` (a code of ``agents.reasons``) and the detail the user is told."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Attachment:
    name: str
    path: str  # workspace-relative, under ``attachments/``
    size: int
    type: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "size": self.size, "type": self.type}

    @property
    def is_image(self) -> bool:
        return self.type in IMAGE_TYPES


IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def max_bytes() -> int:
    return int(settings.NETACLAW["ATTACHMENT_MAX_BYTES"])


def safe_name(name: str) -> str:
    """A file name that is a name only: no folders, control characters or characters file
    systems refuse; at most ``MAX_NAME_CHARS``, keeping its extension."""
    base = unicodedata.normalize("NFC", PurePosixPath(name.replace("\\", "/")).name)
    base = _UNSAFE.sub("_", base).strip(" .") or "file"
    if len(base) > MAX_NAME_CHARS:
        stem, dot, ext = base.rpartition(".")
        ext = ext[:16] if dot else ""
        base = (stem if dot else base)[: MAX_NAME_CHARS - len(ext) - 1] + (f".{ext}" if ext else "")
    return base


def _type_of(name: str) -> str:
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


def _workspace(session: ChatSession) -> Workspace:
    return Workspace(session_workspace_root(session.pk))


def _free_path(workspace: Workspace, name: str) -> str:
    """``attachments/<name>``, or ``<stem>-2.<ext>`` … when that is taken."""
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    for n in range(1, 1000):
        candidate = name if n == 1 else f"{stem}-{n}" + (f".{ext}" if ext else "")
        path = f"{FOLDER}/{candidate}"
        if not workspace.resolve(path).exists():
            return path
    raise AttachmentRefused("workspace_full", "too many files of that name")


def attachment_store(*, session: ChatSession, name: str, data: bytes) -> Attachment:
    """Store one uploaded file in the chat's workspace, or refuse it whole:
    ``attachment_too_large`` over ``ATTACHMENT_MAX_BYTES``, ``workspace_full`` over the
    workspace's limits (the detail says which)."""
    if len(data) > max_bytes():
        raise AttachmentRefused(
            "attachment_too_large", f"{len(data):,} bytes; the limit is {max_bytes():,} bytes"
        )
    workspace = _workspace(session)
    shown = safe_name(name)
    try:
        path = _free_path(workspace, shown)
        workspace.write_bytes(path, data)
    except ToolError as refused:
        raise AttachmentRefused("workspace_full", str(refused)) from None
    return Attachment(shown, path, len(data), _type_of(shown))


def attachments_found(*, session: ChatSession, paths: Sequence[str]) -> list[Attachment]:
    """The uploaded files a message names (``unknown_attachment``: one is not a file under
    ``attachments/`` of this chat's workspace; ``too_many_attachments`` over the limit)."""
    if len(paths) > MAX_PER_MESSAGE:
        raise AttachmentRefused("too_many_attachments", f"at most {MAX_PER_MESSAGE} per message")
    workspace = _workspace(session)
    found: list[Attachment] = []
    for path in dict.fromkeys(paths):
        try:
            target = workspace.resolve(path)
        except ToolError:
            target = None
        root = workspace.root.resolve()
        if target is None or not target.is_relative_to(root / FOLDER) or not target.is_file():
            raise AttachmentRefused("unknown_attachment", path)
        relative = str(target.relative_to(root))
        found.append(
            Attachment(target.name, relative, target.stat().st_size, _type_of(target.name))
        )
    return found


def attachments_of(metadata: dict[str, Any] | None) -> list[Attachment]:
    """What a stored message carries (its ``metadata.attachments``)."""
    found = []
    for item in (metadata or {}).get("attachments") or ():
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            found.append(
                Attachment(
                    str(item.get("name") or Path(item["path"]).name),
                    item["path"],
                    int(item.get("size") or 0),
                    str(item.get("type") or "application/octet-stream"),
                )
            )
    return found


def attachment_note(attachments: Iterable[Attachment]) -> str:
    """What the agent reads of a message's files, after its text."""
    lines = [f"- {a.path} ({a.type}, {a.size:,} bytes)" for a in attachments]
    if not lines:
        return ""
    return (
        "\n\n[Files the user attached to this message, in your workspace (read them with "
        "your file tools):\n" + "\n".join(lines) + "]"
    )


def image_bytes(session_id: Any, attachment: Attachment) -> bytes | None:
    """An attached image's bytes for a model that takes images (None: it is gone)."""
    try:
        target = Workspace(session_workspace_root(session_id)).resolve(attachment.path)
        return target.read_bytes() if target.is_file() else None
    except (ToolError, OSError):
        return None


def attachments_store(
    *, session: ChatSession, files: Sequence[tuple[str, bytes]]
) -> list[Attachment]:
    """Several uploads, all or none: a refused one removes those stored before it."""
    stored: list[Attachment] = []
    try:
        for name, data in files:
            stored.append(attachment_store(session=session, name=name, data=data))
    except AttachmentRefused:
        workspace = _workspace(session)
        for done in stored:
            workspace.resolve(done.path).unlink(missing_ok=True)
        raise
    return stored
