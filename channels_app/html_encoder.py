"""The HTML encoding of the server events (DESIGN 7), for the HTMX chat page.

``render_event_html(event, language=…)`` returns one text frame whose top-level
elements the htmx ws extension swaps out-of-band by id. It renders the same
template partials as the page (``templates/chat/partials/``), so a live bubble and
a reloaded one look the same. Everything is escaped by the templates except
Markdown, which ``chat_markdown`` sanitizes. No database access: the consumer
calls this from its event loop.

Ids the page provides and the frames target:

==========================  ========================================================
``#messages``               ``beforeend``: stored messages (MessageStored, bubbles)
``#stream-text``            ``beforeend``: streamed text (Delta); replaced empty when
                            the assistant message is stored
``#token-bar``              replaced (TokenUpdate): ``role="progressbar"``
``#meter-status``           replaced (TokenUpdate): the status line's left side
``#compaction-flag``        replaced (CompactionStart/Done/Failed, TokenUpdate):
                            ``data-compacting``
``#compaction-status``      replaced: holds the 「正在压缩上下文...」 bubble
                            ``#compaction-pending`` while a compaction runs
``#compaction-progress``    replaced (CompactionProgress): the summary so far, inside
                            ``#compaction-pending`` (``chat.js`` drops it when the
                            page shows no running compaction)
``#turn-status``            replaced (TurnDone, ErrorEvent): ``data-busy="false"``; a
                            user's message released into the history: ``"true"``
``#queued``                 ``beforeend``: a message sent while a turn runs, as a chip
                            under it (the page removes the chip when the message
                            arrives in ``#messages``)
``#notices``                ``beforeend``: alerts (ErrorEvent, CompactionSkipped);
                            CompactionUndone adds the ``data-history-refresh`` signal
                            on which ``chat.js`` reloads ``#messages``; BranchChanged
                            that signal (a switch) or ``data-branch-cut`` (the
                            messages a regenerate or an edit set aside, dropped)
``#meter-alert``            replaced (TokenUpdate): the over-the-window warning
``#context-breakdown``      replaced (TokenUpdate with a breakdown): the figures of
                            the token bar's "Context" panel
``#compaction-suggestion``  replaced: the ask-mode callout (CompactionSuggested);
                            emptied by a TokenUpdate under the threshold
``#session-items``          ``afterbegin``: the chat this page just started
                            (SessionCreated)
``#chat-header-actions``   replaced (SessionCreated): rename, delete, export of the
                            chat the page just started
``#chat-view-toggle``       replaced (TokenUpdate): Compacted / Full, once compacted
``#session-toggle-<id>``    replaced (TokenUpdate): the list item's full/compacted toggle
``#session-signal``         replaced (SessionCreated, SessionUpdated, SessionDeleted):
                            ``chat.js`` takes the new chat's id and address, puts a
                            new title in every place that shows it, or drops a
                            deleted chat from the list
==========================  ========================================================

The streamed answer (Delta) is rendered as Markdown by ``render_stream_html``, which
the page's consumer calls at a bounded rate (``channels_app.stream_preview``); a Delta
encoded here is appended as plain text (an answer too long to re-render).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.html import escape
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from agents.events import (
    BranchChanged,
    CompactionDone,
    CompactionFailed,
    CompactionPreviewReady,
    CompactionProgress,
    CompactionSkipped,
    CompactionStart,
    CompactionSuggested,
    CompactionUndone,
    Delta,
    ErrorEvent,
    MessageStored,
    MessageUpdated,
    ServerEvent,
    SessionCreated,
    SessionDeleted,
    SessionUpdated,
    TokenUpdate,
    TurnDone,
)
from agents.models import SYSTEM_TYPE_COMPACTION
from agents.reasons import user_text
from web.presentation import (
    AgentName,
    ChatListEntry,
    EventView,
    MeterView,
    message_view,
    saved_percent,
)
from web.templatetags.chat_markdown import render_markdown

PARTIALS = "chat/partials/"


def _render(name: str, context: dict[str, Any]) -> str:
    return render_to_string(PARTIALS + name, context)


def _append(target_id: str, inner: str) -> str:
    return f'<div id="{target_id}" hx-swap-oob="beforeend">{inner}</div>'


def _compaction_state(compacting: bool) -> str:
    context = {"compacting": compacting, "oob": True}
    return _render("compaction_status.html", context) + _render("compaction_flag.html", context)


def _message(event: MessageStored) -> str:
    view = message_view(event.message)
    if view.queued:
        return _append("queued", _render("queued.html", {"m": view}))
    html = _append("messages", _render("message.html", {"m": view, "session_id": event.session_id}))
    if view.kind in {"assistant", "event"}:
        html += _render("stream.html", {"oob": True})
    if view.kind == "user":  # its turn starts now
        html += _render("turn_status.html", {"busy": True, "oob": True})
    return html


def _delta(event: Delta) -> str:
    return _append("stream-text", escape(event.text))


def render_stream_html(text: str, *, language: str, plain: bool = False) -> str:
    """The whole answer streamed so far, replacing ``#stream-text``: Markdown rendered
    like the stored answer will be (so nothing jumps when it arrives), or ``plain`` text."""
    with translation.override(language):
        if plain:
            return _render("stream.html", {"oob": True, "plain": text})
        return _render("stream.html", {"oob": True, "html": render_markdown(text)})


def _session_signal(kind: str, session_id: str, title: str = "", url: str = "") -> str:
    context = {"kind": kind, "session_id": session_id, "title": title, "url": url}
    return _render("session_signal.html", context)


def _session_created(event: SessionCreated) -> str:
    entry = ChatListEntry(
        pk=event.session_id,
        title=event.title,
        agent=AgentName(event.agent_name),
        updated_at=timezone.now(),
    )
    item = _render(
        "session_item.html", {"s": entry, "current_session_id": event.session_id, "view": ""}
    )
    url = reverse("chat:session", args=[event.session_id])
    actions = _render(
        "chat_actions.html",
        {"session_id": event.session_id, "title": event.title, "view": "compacted", "oob": True},
    )
    return (
        f'<ul id="session-items" hx-swap-oob="afterbegin">{item}</ul>'
        + actions
        + _session_signal("created", event.session_id, event.title, url)
    )


def _session_updated(event: SessionUpdated) -> str:
    return _session_signal("updated", event.session_id, event.title or _("New chat"))


def _session_deleted(event: SessionDeleted) -> str:
    return _session_signal("deleted", event.session_id)


def _history_switches(event: TokenUpdate) -> str:
    """The header's Compacted / Full switch and the chat list item's toggle, as the chat's
    compaction count says: they appear after its first compaction and go after an undo of
    its last, without a reload."""
    sid, count, view = event.session_id, event.compaction_count, _PAGE_VIEW.get()
    header = {"session_id": sid, "count": count, "view": view, "oob": True}
    item = {"sid": sid, "count": count, "current_session_id": sid, "view": view, "oob": True}
    return _render("view_toggle.html", header) + _render("session_toggle.html", item)


def _token_update(event: TokenUpdate) -> str:
    """The meter, and the compaction state as the lease says (a compaction that ended
    without a done/failed event, e.g. with nothing to compact, never leaves the page
    stuck in the compacting state)."""
    context = {"meter": MeterView(event), "oob": True, "session_id": event.session_id}
    return (
        _render("token_bar.html", context)
        + _render("meter_status.html", context)
        + _render("meter_alert.html", context)
        + _context_figures(event, context)
        + _history_switches(event)
        + _compaction_state(event.compacting)
    )


def _context_figures(event: TokenUpdate, context: dict[str, Any]) -> str:
    """The context panel's figures when the reading has them (a reading without its
    breakdown leaves the last ones), and no ask-mode callout once the context is back
    under the threshold (issue 17 items 4 and 11)."""
    html = ""
    if event.breakdown is not None:
        html += _render("context_breakdown.html", context)
    if not event.over_threshold:
        html += _render("suggest_slot.html", {"suggest": False, "oob": True})
    return html


def _compaction_start(event: CompactionStart) -> str:
    return _compaction_state(True)


def _stored_bubble(session_id: str, stored: dict[str, Any] | None, fallback: EventView) -> str:
    if stored:
        return _render("message.html", {"m": message_view(stored), "session_id": session_id})
    return _render("event_bubble.html", {"event": fallback, "m": None, "session_id": session_id})


def _compaction_done(event: CompactionDone) -> str:
    fallback = EventView(
        system_type=SYSTEM_TYPE_COMPACTION,
        status="done",
        removed_count=event.removed_count,
        saved_percent=saved_percent(event.tokens_before, event.tokens_after),
        tokens_before=event.tokens_before,
        tokens_after=event.tokens_after,
        error="",
        reason="",
        summary_message_id=event.summary_message_id,
        compaction_id=event.compaction_id,  # the bubble's Undo (never on the JSON wire)
    )
    bubble = _stored_bubble(event.session_id, event.event_message, fallback)
    return _compaction_state(False) + _append("messages", bubble)


def _compaction_failed(event: CompactionFailed) -> str:
    fallback = EventView(
        system_type=SYSTEM_TYPE_COMPACTION,
        status="failed",
        removed_count=0,
        saved_percent=0,
        tokens_before=None,
        tokens_after=None,
        error=event.error,
        reason=event.reason or "",
        summary_message_id=None,
    )
    bubble = _stored_bubble(event.session_id, event.event_message, fallback)
    return _compaction_state(False) + _append("messages", bubble)


def _notice(error: str, reason: str | None, level: str) -> str:
    """An alert in the page's language, whatever language the event's ``error`` is in (the
    JSON socket sends that text to programs unchanged)."""
    context = {"error": user_text(reason, error), "reason": reason, "level": level}
    return _append("notices", _render("notice.html", context))


def _compaction_skipped(event: CompactionSkipped) -> str:
    return _notice(event.error, event.reason, "info")


def _turn_done(event: TurnDone) -> str:
    return _render("turn_status.html", {"busy": False, "oob": True})


def _error(event: ErrorEvent) -> str:
    idle = _render("turn_status.html", {"busy": False, "oob": True})
    if event.recorded:  # a failed turn: its bubble (with Retry) says it
        return idle
    return _notice(event.error, event.reason, "error") + idle


# --- compaction control (issue 17): the page's own controls; the JSON socket carries every
# field ---------------------------------------------------------------------------------

# the live summary shows its newest characters only: a frame stays small however long the
# summary grows (the drawer has the whole text once it is stored)
PROGRESS_TAIL_CHARS = 4_000


def _compaction_undone(event: CompactionUndone) -> str:
    """A notice, and the signal on which ``chat.js`` reloads the message list: the restored
    originals come back in their places and the summary leaves the compacted view (the
    page, not this stateless encoder, knows which view and page it shows)."""
    text = ngettext(
        "Compaction undone: %(count)s message is back in the context.",
        "Compaction undone: %(count)s messages are back in the context.",
        event.restored_count,
    ) % {"count": event.restored_count}
    notice = _render("notice.html", {"error": text, "reason": None, "level": "info"})
    signal = _render("undo_refresh.html", {"session_id": event.session_id})
    return _append("notices", notice + signal)


def _branch_changed(event: BranchChanged) -> str:
    """A regenerate or an edit: the signal on which ``chat.js`` drops the messages set
    aside (the new version streams in after them), and the user's message that carries
    the switch swapped in place (an edit's new message arrives as its own MessageStored).
    A switch: the signal on which it reloads ``#messages`` (nothing runs meanwhile)."""
    if not event.turn:
        return _append("notices", _render("undo_refresh.html", {"session_id": event.session_id}))
    signal = ""
    if event.set_aside_from is not None:
        context = {"first": event.set_aside_from, "last": event.set_aside_through}
        signal = _append("notices", _render("branch_cut.html", context))
    if event.kind == "regenerate" and event.marked is not None:
        signal += _message_updated(MessageUpdated(event.session_id, event.marked))
    return signal + _render("turn_status.html", {"busy": True, "oob": True})


def _compaction_suggested(event: CompactionSuggested) -> str:
    """Mode ``ask`` at the threshold: the callout above the token bar, with Compact now,
    Compact with instructions and Not now (issue 17 item 4)."""
    context = {"suggest": True, "oob": True, "session_id": event.session_id}
    return _render("suggest_slot.html", context)


def _compaction_progress(event: CompactionProgress) -> str:
    """The summary so far, in the pending bubble's ``#compaction-progress``
    (``compaction_status.html``; ``chat.js`` drops the frame when the page shows no
    running compaction), as escaped text; "part i of n" for a long middle summarized in
    parts."""
    text = event.text.strip()
    context = {
        "oob": True,
        "text": text[-PROGRESS_TAIL_CHARS:],
        "cut": len(text) > PROGRESS_TAIL_CHARS,
        "chunk": event.chunk,
        "chunks": event.chunks,
    }
    return _render("drawer_summary_progress.html", context)


def _message_updated(event: MessageUpdated) -> str:
    """The bubble again, swapped in place by its id (a pin, an edited summary)."""
    view = message_view(event.message)
    html = _render("message.html", {"m": view, "session_id": event.session_id}).strip()
    marker = f'id="{view.dom_id}"'
    if not view.dom_id or marker not in html:
        return ""
    return html.replace(marker, f'{marker} hx-swap-oob="true"', 1)


def _compaction_preview(event: CompactionPreviewReady) -> str:
    """A summary shown before it applies (issue 17 item 6): the drawer, swapped into
    ``#summary-drawer``, with the summary to read and edit and Accept / Discard; the
    pending bubble ends (the compaction applied nothing)."""
    context = {"preview": event, "session_id": event.session_id}
    return _compaction_state(False) + _render("preview_drawer.html", context)


_RENDERERS: dict[type, Callable[[Any], str]] = {
    MessageStored: _message,
    Delta: _delta,
    TokenUpdate: _token_update,
    CompactionStart: _compaction_start,
    CompactionDone: _compaction_done,
    CompactionFailed: _compaction_failed,
    CompactionSkipped: _compaction_skipped,
    CompactionUndone: _compaction_undone,
    CompactionSuggested: _compaction_suggested,
    CompactionProgress: _compaction_progress,
    CompactionPreviewReady: _compaction_preview,
    MessageUpdated: _message_updated,
    BranchChanged: _branch_changed,
    TurnDone: _turn_done,
    ErrorEvent: _error,
    SessionCreated: _session_created,
    SessionUpdated: _session_updated,
    SessionDeleted: _session_deleted,
}


# The history view of the page the frame goes to (its switches mark the current one).
_PAGE_VIEW: ContextVar[str] = ContextVar("page_view", default="compacted")


def render_event_html(event: ServerEvent, *, language: str, view: str = "compacted") -> str:
    """One HTML frame for ``event``, in ``language`` (a code from settings.LANGUAGES), for a
    page showing the ``view`` of its chat."""
    renderer = _RENDERERS.get(type(event))
    if renderer is None:
        return ""
    token = _PAGE_VIEW.set(view)
    try:
        with translation.override(language):
            return renderer(event)
    finally:
        _PAGE_VIEW.reset(token)
