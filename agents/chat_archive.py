"""The product's own chat file, ``netaclaw.chat`` version 1 (issue 26 item 5): an export that
imports back to the same conversation.

Plain OpenAI JSON (``agents.transfer``) loses what makes a chat this product's: a summary
came back as a user message, a ``turn_event`` record as a system message the model then read,
compacted originals as live history. Here every message keeps its kind and its marks —
summaries stay summaries (each compacted original names its summary by index), pruned tool
outputs stay pruned, records stay records (never sent to a model), pins stay pins, times stay —
so the model's view of the imported chat is the same as the exported one's.

    {"format": "netaclaw.chat", "version": 1, "exportedAt", "title", "agent": {"name"},
     "todos": [...], "messages": [{"role", "content", "toolCalls"?, "toolCallId"?,
       "metadata", "summary", "compacted", "compactedInto"?, "pruned", "pinned",
       "createdAt", "inputTokens"?, "outputTokens"?, "fork"?, "forkVersion"?}],
     "forks"?: [{"kind", "start", "anchor"?, "heads", "versions", "selected"}]}

Branches (issue 26 item 1) come along: the versions set aside are messages too, with the
fork (an index into ``forks``) and the version they wait in; a fork's ``start``, ``anchor``
and ``heads`` are message indexes. Ids are not kept (a re-import is a new chat); positions
become the file's order. Undo of a compaction needs its audit record, which stays with the
original chat.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents.models import Agent, ChatSession, ForkKind, Message, MessageFork, Role
from agents.positions import next_positions
from agents.services import message_estimate
from agents.storable import (
    has_unstorable,
    storable_call_id,
    storable_json,
    storable_text,
    storable_tool_call,
)

FORMAT = "netaclaw.chat"
VERSION = 1
MAX_MESSAGES = 200_000


class ArchiveError(ValueError):
    """A file that is not a valid chat; the message names the message and the field."""


@dataclass(frozen=True)
class ArchiveRow:
    """One message of a chat file, validated."""

    role: str
    content: str
    tool_calls: list[dict[str, str]]
    tool_call_id: str
    metadata: dict[str, Any]
    summary: bool
    compacted: bool
    compacted_into: int | None  # index of its summary in the file
    pruned: bool
    pinned: bool
    created_at: datetime | None
    input_tokens: int | None
    output_tokens: int | None
    fork: int | None = None  # index of the fork whose version it waits in (set aside)
    fork_version: int | None = None


@dataclass(frozen=True)
class ArchiveFork:
    kind: str
    start: int  # index of the first message of its versions (the file's length: none)
    anchor: int | None
    heads: list[int]
    versions: int
    selected: int


@dataclass(frozen=True)
class Archive:
    title: str
    agent_name: str
    todos: list[Any]
    rows: list[ArchiveRow]
    forks: list[ArchiveFork] = field(default_factory=list)


def is_archive(data: Any) -> bool:
    return isinstance(data, dict) and data.get("format") == FORMAT


# -- export ---------------------------------------------------------------------------


def archive_of(session: ChatSession) -> dict[str, Any]:
    """The chat as a ``netaclaw.chat`` document: every message of the full history and of
    the versions set aside, in order, with its marks, and the forks."""
    messages = list(
        Message.objects.filter(session=session, queued_at__isnull=True).order_by(
            "position", "-is_compaction_summary", "-id"
        )
    )
    index = {m.pk: i for i, m in enumerate(messages)}
    forks = list(MessageFork.objects.filter(session=session).order_by("id"))
    fork_index = {f.pk: i for i, f in enumerate(forks)}
    positions = [m.position for m in messages]
    document: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "exportedAt": timezone.now().isoformat(timespec="seconds"),
        "title": session.title,
        "agent": {"name": session.agent.name},
        "todos": list(session.todos or []),
        "messages": [_message_json(m, index, fork_index) for m in messages],
    }
    if forks:
        document["forks"] = [_fork_json(f, index, positions) for f in forks]
    return document


def _fork_json(fork: MessageFork, index: dict[int, int], positions: list[int]) -> dict[str, Any]:
    return {
        "kind": fork.kind,
        "start": bisect_left(positions, fork.start_position),
        "anchor": index.get(fork.anchor_id) if fork.anchor_id is not None else None,
        "heads": [index[int(h)] for h in fork.heads or () if int(h) in index],
        "versions": fork.versions,
        "selected": fork.selected,
    }


def _message_json(
    message: Message, index: dict[int, int], fork_index: dict[int, int]
) -> dict[str, Any]:
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["toolCalls"] = list(message.tool_calls)
    if message.tool_call_id:
        data["toolCallId"] = message.tool_call_id
    data.update(
        {
            "metadata": message.metadata or {},
            "summary": message.is_compaction_summary,
            "compacted": message.compacted_at is not None,
            "pruned": message.pruned_at is not None,
            "pinned": message.pinned,
            "createdAt": message.created_at.isoformat() if message.created_at else None,
        }
    )
    if message.compacted_into_id is not None and message.compacted_into_id in index:
        data["compactedInto"] = index[message.compacted_into_id]
    for key, value in (
        ("inputTokens", message.input_tokens),
        ("outputTokens", message.output_tokens),
    ):
        if value is not None:
            data[key] = value
    if message.fork_id is not None and message.fork_id in fork_index:
        data["fork"] = fork_index[message.fork_id]
        data["forkVersion"] = message.fork_version
    return data


# -- parse ----------------------------------------------------------------------------


def parse_archive(data: Any) -> Archive:
    """Validate a ``netaclaw.chat`` document; ``ArchiveError`` names what is wrong."""
    if not is_archive(data):
        raise ArchiveError(f"not a {FORMAT} file")
    if data.get("version") != VERSION:
        raise ArchiveError(
            f"{FORMAT} version {data.get('version')!r} is not supported (this server reads {VERSION})"
        )
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise ArchiveError("'messages' must be a list")
    if len(messages) > MAX_MESSAGES:
        raise ArchiveError(f"a chat file holds at most {MAX_MESSAGES:,} messages")
    title = data.get("title") or ""
    agent = data.get("agent") or {}
    todos = data.get("todos") or []
    if not isinstance(title, str) or not isinstance(agent, dict) or not isinstance(todos, list):
        raise ArchiveError("'title' must be a string, 'agent' an object, 'todos' a list")
    rows = [_row(raw, i) for i, raw in enumerate(messages)]
    for i, row in enumerate(rows):
        target = row.compacted_into
        if target is None:
            continue
        if not 0 <= target < len(rows) or not rows[target].summary:
            raise ArchiveError(f"message {i}: 'compactedInto' must be the index of a summary")
        if not row.compacted:
            raise ArchiveError(f"message {i}: 'compactedInto' is only for compacted messages")
    forks = _forks(data.get("forks") or [], len(rows))
    for i, row in enumerate(rows):
        if row.fork is not None and not (
            0 <= row.fork < len(forks) and 1 <= (row.fork_version or 0) <= forks[row.fork].versions
        ):
            raise ArchiveError(f"message {i}: 'fork' and 'forkVersion' must name a fork's version")
    return Archive(title, str(agent.get("name") or ""), todos, rows, forks)


def _forks(raw: Any, count: int) -> list[ArchiveFork]:
    if not isinstance(raw, list):
        raise ArchiveError("'forks' must be a list")
    forks = []
    for i, item in enumerate(raw):
        where = f"fork {i}"
        if not isinstance(item, dict) or item.get("kind") not in ForkKind.values:
            raise ArchiveError(f"{where}: 'kind' must be one of {', '.join(ForkKind.values)}")
        numbers: list[Any] = [item.get(k) for k in ("start", "versions", "selected")]
        anchor, heads = item.get("anchor"), item.get("heads") or []
        indexes = [*numbers, *heads, *([] if anchor is None else [anchor])]
        if not isinstance(heads, list) or not all(_whole(n) for n in indexes):
            raise ArchiveError(
                f"{where}: 'start', 'versions', 'selected', 'anchor' and 'heads' must be whole numbers"
            )
        start, versions, selected = numbers
        if not (0 <= start <= count and 1 <= selected <= versions) or any(
            n >= count for n in [*heads, *([] if anchor is None else [anchor])]
        ):
            raise ArchiveError(f"{where}: an index or a version is out of range")
        forks.append(ArchiveFork(item["kind"], start, anchor, heads, versions, selected))
    return forks


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _row(raw: Any, i: int) -> ArchiveRow:
    where = f"message {i}"
    if not isinstance(raw, dict):
        raise ArchiveError(f"{where}: must be an object")
    role = raw.get("role")
    if role not in Role.values:
        raise ArchiveError(
            f"{where}: unknown role {role!r}; expected one of {', '.join(Role.values)}"
        )
    content = raw.get("content", "")
    if not isinstance(content, str):
        raise ArchiveError(f"{where}: 'content' must be a string")
    calls = raw.get("toolCalls") or []
    if not isinstance(calls, list) or (calls and role != Role.ASSISTANT):
        raise ArchiveError(f"{where}: only assistant messages carry a 'toolCalls' list")
    for k, call in enumerate(calls):
        if not isinstance(call, dict) or not all(
            isinstance(call.get(key), str) for key in ("id", "name", "arguments")
        ):
            raise ArchiveError(f"{where} tool call {k}: needs string 'id', 'name' and 'arguments'")
    call_id = raw.get("toolCallId") or ""
    if not isinstance(call_id, str) or (role == Role.TOOL and not call_id):
        raise ArchiveError(f"{where}: a tool message needs a string 'toolCallId'")
    metadata = raw.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ArchiveError(f"{where}: 'metadata' must be an object")
    flags = {key: raw.get(key, False) for key in ("summary", "compacted", "pruned", "pinned")}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise ArchiveError(f"{where}: '{key}' must be true or false")
    into = raw.get("compactedInto")
    if into is not None and (not isinstance(into, int) or isinstance(into, bool)):
        raise ArchiveError(f"{where}: 'compactedInto' must be a message index")
    fork, fork_version = raw.get("fork"), raw.get("forkVersion")
    if (fork is None) != (fork_version is None) or not all(
        _whole(v) for v in (fork, fork_version) if v is not None
    ):
        raise ArchiveError(f"{where}: 'fork' and 'forkVersion' go together, as whole numbers")
    tokens = {key: raw.get(key) for key in ("inputTokens", "outputTokens")}
    for key, value in tokens.items():
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            raise ArchiveError(f"{where}: '{key}' must be a whole number")
    texts = [content, call_id, *(v for c in calls for v in c.values())]
    if any("\x00" in t or has_unstorable(t) for t in texts):
        raise ArchiveError(f"{where}: contains a NUL character or invalid Unicode")
    return ArchiveRow(
        role=role,
        content=content,
        tool_calls=[{k: c[k] for k in ("id", "name", "arguments")} for c in calls],
        tool_call_id=call_id,
        metadata=metadata,
        summary=flags["summary"],
        compacted=flags["compacted"],
        compacted_into=into,
        pruned=flags["pruned"],
        pinned=flags["pinned"],
        created_at=_time(raw.get("createdAt"), where),
        input_tokens=tokens["inputTokens"],
        output_tokens=tokens["outputTokens"],
        fork=fork,
        fork_version=fork_version,
    )


def _time(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        raise ArchiveError(f"{where}: 'createdAt' must be an ISO 8601 time") from None
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed)


# -- import ---------------------------------------------------------------------------


def archive_import(*, archive: Archive, owner: Any, agent: Agent, title: str = "") -> ChatSession:
    """A new chat of ``owner`` holding the archive's messages with their marks: one
    transaction, nothing written when anything fails."""
    now = timezone.now()
    with transaction.atomic():
        session = ChatSession.objects.create(
            owner=owner,
            agent=agent,
            title=storable_text(title or archive.title)[:200],
            todos=archive.todos,
            compaction_count=sum(1 for r in archive.rows if r.summary),
        )
        first = next_positions(len(archive.rows)) if archive.rows else 0
        objs = [_message(session, first + i, row, now) for i, row in enumerate(archive.rows)]
        stored = Message.objects.bulk_create(objs, batch_size=500)
        forks = [_fork(session, fork, stored, first) for fork in archive.forks]
        linked = []
        for message, row in zip(stored, archive.rows, strict=True):
            message.created_at = row.created_at or now
            if row.compacted_into is not None:
                message.compacted_into_id = stored[row.compacted_into].pk
            if row.fork is not None:
                message.fork, message.fork_version = forks[row.fork], row.fork_version
            linked.append(message)
        Message.objects.bulk_update(
            linked, ["created_at", "compacted_into", "fork", "fork_version"], batch_size=500
        )
    return session


def _fork(
    session: ChatSession, fork: ArchiveFork, stored: list[Message], first: int
) -> MessageFork:
    return MessageFork.objects.create(
        session=session,
        kind=fork.kind,
        start_position=first + fork.start,
        anchor=stored[fork.anchor] if fork.anchor is not None else None,
        heads=[stored[h].pk for h in fork.heads],
        versions=fork.versions,
        selected=fork.selected,
    )


def _message(session: ChatSession, position: int, row: ArchiveRow, now: datetime) -> Message:
    calls = [storable_tool_call(c) for c in row.tool_calls]
    content = storable_text(row.content)
    return Message(
        session=session,
        position=position,
        role=row.role,
        content=content,
        tool_calls=calls,
        tool_call_id=storable_call_id(row.tool_call_id),
        metadata=storable_json(row.metadata),
        token_estimate=message_estimate(row.role, content, calls),
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        is_compaction_summary=row.summary,
        compacted_at=now if row.compacted else None,
        pruned_at=now if row.pruned else None,
        pinned=row.pinned,
    )
