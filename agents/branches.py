"""Regenerate and edit-and-resend, with the earlier versions kept (issue 26 item 1).

A fork is where the conversation took another way. Its versions each run from the fork's
``start_position`` to the end of the conversation, so the chosen version is simply every
message of the active branch from there on, and switching versions is two statements:
set aside what is active from that position (tagged with the version it was), bring back
the messages tagged with the chosen one. A fork inside a version that is set aside keeps
its own versions tagged with it, so nested forks need no tree.

Only the active branch is the history: every view, the model's context and compaction
read ``Message.objects.on_branch()``. A version a compaction has summarized into the
history is the history now: neither a fork inside a compacted span nor a switch of a fork
whose messages a summary replaced is allowed (undo the compaction first).

Callers hold the session's lease (no turn or compaction runs meanwhile).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max, QuerySet
from django.utils import timezone

from agents import services
from agents.message_format import message_to_json
from agents.models import ChatSession, ForkKind, Message, MessageFork, Role


class BranchRefused(Exception):
    """What was asked cannot be done to this history; ``reason`` is a code of
    ``agents.reasons``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class BranchMark:
    """The version switch a message carries: the regenerated answers' on the user's message
    they answer, an edit's on the user's message of the chosen version."""

    fork_id: int
    kind: str
    version: int
    versions: int

    def to_json(self) -> dict[str, Any]:
        return {
            "forkId": self.fork_id,
            "kind": self.kind,
            "version": self.version,
            "versions": self.versions,
        }


@dataclass(frozen=True, slots=True)
class BranchChange:
    """A fork made, grown or switched: ``set_aside`` — the first message no longer in the
    history and the highest id among them (None: nothing was); ``marked`` — the message that carries the switch now;
    ``runs_turn`` — an answer follows (a regenerate or an edit)."""

    fork: MessageFork
    set_aside: tuple[int, int] | None
    marked: Message | None
    runs_turn: bool

    @property
    def mark(self) -> BranchMark:
        return mark_of(self.fork)


def mark_of(fork: MessageFork) -> BranchMark:
    return BranchMark(fork.pk, fork.kind, fork.selected, fork.versions)


# --- making and switching ---------------------------------------------------------------


def branch_regenerate(*, session: ChatSession, message_id: int) -> BranchChange:
    """Set aside the answer ``message_id`` belongs to — everything after the user's message
    it answers — as a version, so the turn that follows answers that message again."""
    message = _on_branch(session, message_id)
    if message.role != Role.ASSISTANT or message.is_compaction_summary:
        raise BranchRefused("not_regenerable")
    anchor = (
        Message.objects.on_branch()
        .filter(session=session, role=Role.USER, position__lt=message.position)
        .exclude(is_compaction_summary=True)
        .order_by("-position", "-id")
        .first()
    )
    if anchor is None or anchor.compacted_at is not None:
        raise BranchRefused("inside_compacted")
    fork = _forks(session).filter(kind=ForkKind.REGENERATE, anchor=anchor).order_by("-id").first()
    with transaction.atomic():
        if fork is None:
            fork = MessageFork.objects.create(
                session=session,
                kind=ForkKind.REGENERATE,
                start_position=anchor.position + 1,
                anchor=anchor,
            )
        set_aside = _set_aside(session, fork)
        if set_aside is None:
            raise BranchRefused("not_regenerable")
        _add_version(fork)
    return BranchChange(fork, set_aside, anchor, runs_turn=True)


def branch_edit(*, session: ChatSession, message_id: int, content: str) -> BranchChange:
    """Set aside the user's message ``message_id`` and everything after it as a version,
    and store ``content`` as the message of the new one (its answer follows)."""
    message = _on_branch(session, message_id)
    if message.role != Role.USER or message.is_compaction_summary or message.is_system_event:
        raise BranchRefused("not_editable")
    fork = next(
        (f for f in _forks(session).filter(kind=ForkKind.EDIT) if _head(f) == message.pk),
        None,
    )
    with transaction.atomic():
        if fork is None:
            fork = MessageFork.objects.create(
                session=session,
                kind=ForkKind.EDIT,
                start_position=message.position,
                heads=[message.pk],
            )
        set_aside = _set_aside(session, fork)
        edited = services.message_append(session=session, role=Role.USER, content=content)
        fork.heads = [*fork.heads, edited.pk]
        _add_version(fork)
    return BranchChange(fork, set_aside, edited, runs_turn=True)


def branch_select(*, session: ChatSession, fork_id: int, version: int) -> BranchChange:
    """Make ``version`` of the fork the history again, and set the current one aside."""
    fork = _forks(session).filter(pk=fork_id).first()
    if fork is None or not _on_branch_fork(fork):
        raise BranchRefused("unknown_fork")  # or inside a version set aside
    if not 1 <= version <= fork.versions:
        raise BranchRefused("unknown_version")
    if version == fork.selected:
        return BranchChange(fork, None, _marked(fork), runs_turn=False)
    with transaction.atomic():
        set_aside = _set_aside(session, fork)
        Message.objects.filter(session=session, fork=fork, fork_version=version).update(
            fork=None, fork_version=None
        )
        fork.selected = version
        fork.save(update_fields=["selected"])
        ChatSession.objects.filter(pk=session.pk).update(updated_at=timezone.now())
    return BranchChange(fork, set_aside, _marked(fork), runs_turn=False)


def _on_branch(session: ChatSession, message_id: int) -> Message:
    message = Message.objects.on_branch().filter(session=session, pk=message_id).first()
    if message is None or message.queued_at is not None:
        raise BranchRefused("unknown_message")
    if message.compacted_at is not None:
        raise BranchRefused("inside_compacted")
    return message


def _set_aside(session: ChatSession, fork: MessageFork) -> tuple[int, int] | None:
    """Tag what is the history from the fork's start with its chosen version; returns the
    first of them and their highest id (None: nothing was there). Refused when a summary replaced any of it:
    the version is part of the compacted history."""
    tail = Message.objects.on_branch().filter(
        session=session, position__gte=fork.start_position, queued_at__isnull=True
    )
    if (
        tail.filter(compacted_at__isnull=False).exists()
        or tail.filter(is_compaction_summary=True).exists()
    ):
        raise BranchRefused("inside_compacted")
    first = (
        tail.order_by("position", "-is_compaction_summary", "-id")
        .values_list("pk", flat=True)
        .first()
    )
    if first is None:
        return None
    last = tail.aggregate(last=Max("pk"))["last"]
    tail.update(fork=fork, fork_version=fork.selected)
    return first, last


def _add_version(fork: MessageFork) -> None:
    fork.versions += 1
    fork.selected = fork.versions
    fork.save()


# --- reading ------------------------------------------------------------------------------


def _forks(session: ChatSession) -> QuerySet[MessageFork]:
    """The session's forks, on the active branch or not (a fork is on it when the message
    that carries its switch is: ``_marked_id``)."""
    return MessageFork.objects.filter(session=session)


def _head(fork: MessageFork) -> int | None:
    """The message carrying an edit fork's switch: its chosen version's user message."""
    heads = fork.heads or []
    index = fork.selected - 1
    return int(heads[index]) if 0 <= index < len(heads) else None


def _marked_id(fork: MessageFork) -> int | None:
    return fork.anchor_id if fork.kind == ForkKind.REGENERATE else _head(fork)


def _on_branch_fork(fork: MessageFork) -> bool:
    """Its switch is on the active branch (else it waits inside a version set aside)."""
    marked = _marked_id(fork)
    return marked is not None and Message.objects.on_branch().filter(pk=marked).exists()


def _marked(fork: MessageFork) -> Message | None:
    marked = _marked_id(fork)
    return Message.objects.filter(pk=marked).first() if marked is not None else None


def branch_marks(
    *, session: ChatSession, ids: Iterable[int] | None = None
) -> dict[int, list[BranchMark]]:
    """The switches of every fork whose message is on the active branch, by that message's
    id (``ids``: only those): an edited message's versions, the answers to a message, or
    both. Empty — and one cheap query — for a chat never forked."""
    forks = list(_forks(session))
    if not forks:
        return {}
    by_message: dict[int, list[MessageFork]] = {}
    for fork in forks:
        marked = _marked_id(fork)
        if marked is not None:
            by_message.setdefault(marked, []).append(fork)
    wanted = set(by_message) if ids is None else set(by_message) & set(ids)
    active = set(Message.objects.on_branch().filter(pk__in=wanted).values_list("pk", flat=True))
    return {m: [mark_of(f) for f in fs] for m, fs in by_message.items() if m in active}


@dataclass(frozen=True, slots=True)
class OtherVersion:
    """A version set aside, for the full history: its number and its messages in order."""

    fork_id: int
    version: int
    messages: tuple[Message, ...]


def other_versions(
    *, session: ChatSession, fork_ids: Iterable[int]
) -> dict[int, list[OtherVersion]]:
    """The versions set aside of these forks, by fork id, each version's messages in order."""
    found: dict[tuple[int, int], list[Message]] = {}
    rows = Message.objects.filter(session=session, fork_id__in=list(fork_ids)).order_by(
        "position", "-is_compaction_summary", "-id"
    )
    for message in rows:
        found.setdefault((message.fork_id or 0, message.fork_version or 0), []).append(message)
    versions: dict[int, list[OtherVersion]] = {}
    for (fork_id, version), messages in sorted(found.items()):
        versions.setdefault(fork_id, []).append(OtherVersion(fork_id, version, tuple(messages)))
    return versions


# the key of a message's switch in its JSON: an edit's versions of it, the answers to it
MARK_KEYS = {ForkKind.EDIT: "branch", ForkKind.REGENERATE: "answers"}


def messages_json(
    *, session: ChatSession, messages: Iterable[Message], view: str = "compacted"
) -> list[dict[str, Any]]:
    """Messages as the page, REST and events show them, with the switches they carry:
    ``branch`` — the versions of an edited message, ``answers`` — the regenerated answers
    to it; each ``{forkId, kind, version, versions}`` and, in the full history, the
    versions set aside (``otherVersions``: ``[{version, messages}]``)."""
    rows = [message_to_json(m, view=view) for m in messages]
    marks = branch_marks(session=session, ids=[int(r["id"]) for r in rows])
    if not marks:
        return rows
    others: dict[int, list[OtherVersion]] = {}
    if view == "full":
        fork_ids = [mark.fork_id for found in marks.values() for mark in found]
        others = other_versions(session=session, fork_ids=fork_ids)
    for row in rows:
        for mark in marks.get(int(row["id"]), ()):
            shown = mark.to_json()
            if others.get(mark.fork_id):
                shown["otherVersions"] = [
                    {
                        "version": v.version,
                        "messages": [message_to_json(m, view="full") for m in v.messages],
                    }
                    for v in others[mark.fork_id]
                ]
            row[MARK_KEYS[ForkKind(mark.kind)]] = shown
    return rows
