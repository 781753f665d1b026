"""Pages of compaction control (issue 17): the summary drawer and what it offers.

The drawer (htmx) or, without script, the summary page shows what shaped a summary (the
standing and focus instructions of its compaction), what the compaction dropped (each
original with its facts, a link to it and a one-click pin that brings it back), an editor
for a summary still in effect and the history of its edits. Thin views: the one access
gate, then ``compaction.controls``; the compaction's audit record is read as it is
(``compaction.records``). Undo is a socket frame from the bubble (``event_bubble.html``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from django import forms
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import trigger_client_event

from agents import reasons
from agents.history_pages import MessageNotFound, summary_for_session
from agents.models import ChatSession, CompactionStatus, Message
from compaction import records
from compaction.controls import SUMMARY_MAX_CHARS, EditRefused, message_pin, summary_edit
from condense import summary_body, with_summary_body
from web.page_access import HtmxHttpRequest, own_session

if TYPE_CHECKING:  # django-stubs' type of a lazy translation (a development dependency)
    from django_stubs_ext import StrPromise

# what chat.js reloads the message list on (an original a pin brought back shows in place)
HISTORY_CHANGED = "netaclaw:history-changed"

FACT_KINDS: dict[str, StrPromise] = {
    "number": gettext_lazy("number"),
    "path": gettext_lazy("file path"),
    "url": gettext_lazy("URL"),
    "identifier": gettext_lazy("identifier"),
}


ROLES: dict[str, StrPromise] = {
    "user": gettext_lazy("user"),
    "assistant": gettext_lazy("assistant"),
    "tool": gettext_lazy("tool result"),
    "system": gettext_lazy("system"),
}


class SummaryEditForm(forms.Form):
    content = forms.CharField(
        label=gettext_lazy("Summary text"), max_length=SUMMARY_MAX_CHARS, widget=forms.Textarea
    )


@dataclass(frozen=True, slots=True)
class DroppedFactView:
    value: str
    kind: str

    @property
    def kind_label(self) -> str:
        return str(FACT_KINDS.get(self.kind, self.kind))


@dataclass(frozen=True, slots=True)
class DroppedGroup:
    """The facts one summarized original held that the compaction dropped; pinning that
    original brings it back into the compacted view."""

    message_id: int | None
    facts: tuple[DroppedFactView, ...]
    role: str = ""
    created_at: datetime | None = None
    pinned: bool = False
    stored: bool = False  # the original is still a message of the session

    @property
    def dom_id(self) -> str:
        return f"drawer-dropped-{self.message_id}" if self.message_id is not None else ""

    @property
    def role_label(self) -> str:
        return str(ROLES.get(self.role, self.role))


@dataclass(frozen=True, slots=True)
class SummaryEditView:
    """One edit of the summary, newest first: who, when, and the text before it."""

    by: str
    at: datetime | None
    previous: str


def _own_summary(request: HttpRequest, session_id: uuid.UUID, message_id: int) -> Message:
    session = own_session(request, session_id)
    try:
        summary = summary_for_session(session=session, message_id=message_id)
    except MessageNotFound as exc:
        raise Http404(_("No such summary.")) from exc
    summary.session = session  # checked through the gate: no second read
    return summary


def dropped_groups(session: ChatSession, dropped: Iterable[dict[str, Any]]) -> list[DroppedGroup]:
    """``CompactionRecord.dropped`` (``[{value, kind, messageId}]``) by original message, in
    the order the list names them, with each original's role, time and pin."""
    order: dict[int | None, list[DroppedFactView]] = {}
    for fact in dropped:
        raw_id = fact.get("messageId")
        key = raw_id if isinstance(raw_id, int) else None
        order.setdefault(key, []).append(
            DroppedFactView(str(fact.get("value", "")), str(fact.get("kind", "")))
        )
    ids = [k for k in order if k is not None]
    stored = {
        m.pk: m
        for m in Message.objects.filter(session=session, pk__in=ids).only(
            "pk", "role", "created_at", "pinned"
        )
    }
    groups = []
    for key, facts in order.items():
        message = stored.get(key) if key is not None else None
        groups.append(
            DroppedGroup(
                message_id=key,
                facts=tuple(facts),
                role=message.role if message else "",
                created_at=message.created_at if message else None,
                pinned=bool(message and message.pinned),
                stored=message is not None,
            )
        )
    return groups


def _edits(raw: Iterable[dict[str, Any]]) -> list[SummaryEditView]:
    views = []
    for edit in raw:
        try:
            at: datetime | None = datetime.fromisoformat(str(edit.get("at") or ""))
        except ValueError:
            at = None
        previous = summary_body(str(edit.get("previous") or ""))
        views.append(SummaryEditView(str(edit.get("by") or ""), at, previous))
    return views[::-1]


class DrawerContext(TypedDict):
    """What the drawer and the summary page show of a summary."""

    summary: Message
    summary_body: str
    replaced_count: int
    session_id: str
    instructions: str
    undone: bool
    editable: bool
    form: SummaryEditForm
    edit_error: str
    saved: bool
    edits: list[SummaryEditView]
    dropped_groups: list[DroppedGroup]
    dropped_count: int
    in_drawer: bool


def drawer_context(
    request: HttpRequest,
    summary: Message,
    *,
    form: SummaryEditForm | None = None,
    error: str = "",
    saved: bool = False,
) -> DrawerContext:
    """What the drawer and the summary page show of ``summary``."""
    session = summary.session
    record = records.record_of_summary(summary)
    metadata = summary.metadata or {}
    instructions = record.instructions if record else str(metadata.get("instructions") or "")
    undone = bool(metadata.get("undone")) or (
        record is not None and record.status == CompactionStatus.UNDONE
    )
    body = summary_body(summary.content)
    dropped = list(record.dropped or []) if record else []
    return {
        "summary": summary,
        "summary_body": body,
        "replaced_count": summary.replaced.count(),
        "session_id": str(session.pk),
        "instructions": instructions.strip(),
        "undone": undone,
        "editable": summary.compacted_at is None,
        "form": form or SummaryEditForm(initial={"content": body}),
        "edit_error": error,
        "saved": saved,
        "edits": _edits(record.edits if record else metadata.get("edits", [])),
        "dropped_groups": dropped_groups(session, dropped),
        "dropped_count": len(dropped),
        "in_drawer": bool(getattr(request, "htmx", False)),
    }


def render_summary(
    request: HtmxHttpRequest,
    summary: Message,
    *,
    status: int = 200,
    form: SummaryEditForm | None = None,
    error: str = "",
    saved: bool = False,
) -> HttpResponse:
    """The drawer for htmx, else the summary page."""
    context = drawer_context(request, summary, form=form, error=error, saved=saved)
    template = "chat/partials/summary_drawer.html" if request.htmx else "chat/summary_page.html"
    return render(request, template, context, status=status)


@require_GET
def summary_detail(
    request: HtmxHttpRequest, session_id: uuid.UUID, message_id: int
) -> HttpResponse:
    """A compaction summary as sanitized Markdown, with its controls: the drawer or a page."""
    return render_summary(request, _own_summary(request, session_id, message_id))


@require_POST
def summary_edit_page(
    request: HtmxHttpRequest, session_id: uuid.UUID, message_id: int
) -> HttpResponse:
    """Save an edited summary (``compaction.controls.summary_edit``: kept in the audit with
    who and when), then the drawer again with the new text. A refusal re-renders it with
    the reason: with 200 for htmx (which swaps no error response), 400/409 for a page."""
    summary = _own_summary(request, session_id, message_id)
    form = SummaryEditForm(request.POST)
    if not form.is_valid():
        error = " ".join(str(e) for errors in form.errors.values() for e in errors)
        return _refused(request, summary, form, error, 400)
    try:
        summary_edit(
            session=summary.session,
            message_id=summary.pk,
            content=with_summary_body(summary.content, form.cleaned_data["content"]),
            editor=request.user,
        )
    except EditRefused as exc:
        return _refused(request, summary, form, reasons.message(exc.reason), 409)
    if not request.htmx:
        return redirect("chat:summary", summary.session_id, summary.pk)
    summary.refresh_from_db()
    return render_summary(request, summary, saved=True)


def _refused(
    request: HtmxHttpRequest, summary: Message, form: SummaryEditForm, error: str, status: int
) -> HttpResponse:
    summary.refresh_from_db()
    code = 200 if request.htmx else status
    return render_summary(request, summary, status=code, form=form, error=error)


@require_POST
def dropped_pin(
    request: HtmxHttpRequest, session_id: uuid.UUID, message_id: int, original_id: int
) -> HttpResponse:
    """Pin an original the summary's compaction dropped facts of (``message_pin``: it comes
    back into the compacted view, with the tool calls or results it pairs with); the item
    again, now pinned, and the page reloads its message list (``HISTORY_CHANGED``)."""
    summary = _own_summary(request, session_id, message_id)
    record = records.record_of_summary(summary)
    facts = (
        [f for f in (record.dropped or []) if f.get("messageId") == original_id] if record else []
    )
    if not facts:  # the drawer lists no such original
        raise Http404(_("No such message."))
    try:
        message_pin(session=summary.session, message_id=original_id, pinned=True)
    except MessageNotFound as exc:
        raise Http404(_("No such message.")) from exc
    if not request.htmx:
        url = reverse("chat:summary", args=[summary.session_id, summary.pk])
        return redirect(f"{url}#drawer-dropped-{original_id}")
    (group,) = dropped_groups(summary.session, facts)
    context = {"g": group, "session_id": str(summary.session_id), "summary": summary}
    context["in_drawer"] = True
    response = render(request, "chat/partials/drawer_dropped_item.html", context)
    return trigger_client_event(response, HISTORY_CHANGED)
