"""Every failure ``reason`` a user or a client can be told, with its message (zh-hans, English).

A reason is a stable code: stored in a failure bubble's metadata, sent as the ``reason`` of
``compaction_failed`` / ``compaction_skipped`` / ``error`` events (CONTRACT §5) and of the REST
API's ``{"error", "reason"}`` bodies. Its message is a Django translation: the msgid is the
English, the Chinese is in ``locale/zh_Hans`` (``locale/fill_translations.py``). Two texts are
made from it:

- ``user_text``: the active language only — what a page shows (the chat page, its socket);
- ``wire_text``: "中文 (English)" whatever language is active — the ``error`` stored with a
  failure bubble and sent to programs (the seed's language first, the English for the rest).

Two kinds carry their own English on the wire, because it holds details only they know: a
failed model call (``llm.LLMError``: the provider's status and words; its head is the same
English as here, a test holds them equal) and a refused socket frame
(the socket protocol: which field, which limit). ``user_text`` still puts them into
the page's language.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from django.utils import translation
from django.utils.functional import Promise
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

ReasonKind = Literal["compaction", "provider", "turn", "socket", "request", "control"]

SEED_LANGUAGE = "zh-hans"


@dataclass(frozen=True, slots=True)
class Reason:
    kind: ReasonKind
    message: Promise
    http_status: int | None = None  # the REST answer's status (``http_status``); None: its kind's


REASONS: dict[str, Reason] = {
    # --- a compaction that failed (the history is unchanged) or was skipped -------------
    "no_auxiliary_model": Reason("compaction", _("No auxiliary model is configured")),
    "nothing_to_compact": Reason("compaction", _("There is nothing to compact yet")),
    "oversized_message": Reason(
        "compaction", _("One message is too large to compact; consider splitting it")
    ),
    "system_prompt_too_long": Reason(  # also refuses a chat turn before the model is called
        "compaction",
        _(
            "The system prompt is too long: it alone exceeds the compaction threshold; "
            "shorten it on the agent's page"
        ),
    ),
    "no_gain": Reason("compaction", _("A summary would not save any tokens")),
    "summary_too_short": Reason(
        "compaction",
        _("The summary came back unusually short for what it summarizes"),
        http_status=502,
    ),
    "head_too_long": Reason(
        "compaction",
        _(
            "The protected first messages alone leave no room for a summary under the "
            'compaction threshold; lower "protected head messages" or shorten them'
        ),
    ),
    "tail_too_long": Reason(
        "compaction",
        _(
            "The latest messages are too large to keep beside a summary under the "
            "threshold; split them or start a new chat"
        ),
    ),
    "no_room_for_summary": Reason(
        "compaction",
        _(
            "What must be kept leaves no room for a summary worth writing under the "
            'threshold; unpin messages, lower "protected head messages" or start a new chat'
        ),
    ),
    "earlier_summary_too_long": Reason(
        "compaction",
        _(
            "The earlier summary is too long to fold into the room left; undo a compaction "
            "or start a new chat"
        ),
    ),
    "summary_cut_off": Reason(
        "compaction",
        _("The summary was cut off by the auxiliary model's output limit, twice"),
        http_status=502,
    ),
    "summary_tool_call_only": Reason(
        "compaction",
        _("The auxiliary model answered with a tool call instead of a summary, twice"),
        http_status=502,
    ),
    "summary_reasoning_only": Reason(
        "compaction",
        _("The auxiliary model returned only reasoning, no summary, twice"),
        http_status=502,
    ),
    "summary_chat_reply": Reason(
        "compaction",
        _("The auxiliary model answered the conversation instead of summarizing it, twice"),
        http_status=502,
    ),
    "summary_refused": Reason(
        "compaction", _("The auxiliary model refused to write the summary, twice"), http_status=502
    ),
    "summary_meta_answer": Reason(
        "compaction",
        _("The auxiliary model wrote about the task instead of the summary, twice"),
        http_status=502,
    ),
    "summary_missing_sections": Reason(
        "compaction",
        _("The summary came back without the sections a hand-off needs, twice"),
        http_status=502,
    ),
    "summary_empty": Reason("compaction", _("The summary came back empty, twice"), http_status=502),
    "summary_longer_than_input": Reason(
        "compaction",
        _("The summary came back longer than what it summarizes, twice"),
        http_status=502,
    ),
    "summary_over_budget": Reason(
        "compaction",
        _("The summary does not fit under the compaction threshold, even shorter"),
        http_status=502,
    ),
    # a race lost to another writer or compaction: 409, worth trying again
    "history_changed": Reason(
        "compaction", _("The history changed during the compaction; try again"), http_status=409
    ),
    "storage_error": Reason("compaction", _("The summary could not be stored"), http_status=500),
    "in_progress": Reason(
        "compaction",
        _("A compaction of this session is already in progress; this request was skipped."),
        http_status=409,
    ),
    "under_threshold": Reason(
        "compaction", _("The context is under the threshold; there is nothing to compact")
    ),
    "cancelled": Reason(
        "compaction",
        _("The compaction was cancelled; the history is unchanged"),
        http_status=409,
    ),
    "compaction_interrupted": Reason(
        "compaction",
        _("The compaction was interrupted (its server stopped); the history is unchanged"),
        http_status=409,
    ),
    # --- compaction control (issue 17; CONTRACT §7) -----------------------------------
    "unknown_message": Reason("compaction", _("No such message in this chat")),
    "pins_too_long": Reason(
        "compaction",
        _(
            "The pinned messages alone leave no room for a summary under the compaction "
            "threshold; unpin some of them"
        ),
    ),
    "not_latest": Reason(
        "control", _("Only the latest compaction that is still in effect can be undone")
    ),
    "nothing_to_undo": Reason("control", _("This chat has no compaction to undo")),
    "summary_not_active": Reason(
        "control", _("This summary is no longer in effect (undone or folded into a later one)")
    ),
    "not_a_summary": Reason("request", _("Only a compaction summary's content can be edited")),
    # --- a model call failed (llm.LLMErrorReason), in a chat turn or a summary ----------
    "timeout": Reason("provider", _("The model did not answer in time")),
    "rate_limited": Reason("provider", _("The model provider is rate limiting requests")),
    "upstream_error": Reason("provider", _("The model provider failed")),
    "invalid_response": Reason(
        "provider", _("The model provider sent a response that could not be read")
    ),
    "connection_error": Reason("provider", _("Could not connect to the model provider")),
    "auth_error": Reason("provider", _("The model provider refused the API key")),
    "bad_request": Reason("provider", _("The model provider rejected the request")),
    "context_too_long": Reason(
        "provider", _("The conversation is too long for the model's context window")
    ),
    # --- a chat turn that could not run or stopped ------------------------------------
    "no_model_channel": Reason(
        "turn",
        _(
            "This agent has no model channel yet, so it cannot answer. Add one (an Anthropic, "
            "OpenAI or DeepSeek key, or an OpenAI-compatible server such as Ollama or vLLM) and "
            "choose it on the agent's page."
        ),
    ),
    "step_limit": Reason(
        "turn", _("The agent stopped after its step limit; send a message to continue.")
    ),
    "internal_error": Reason("turn", _("Something went wrong on the server; the chat can go on.")),
    "stopped": Reason("turn", _("Stopped. What the agent had written so far is kept.")),
    "interrupted": Reason(
        "turn",
        _(
            "Interrupted: the server running this answer stopped. It is answered again by "
            "itself; if it is not, use Retry."
        ),
    ),
    # --- a client frame the socket refused --------------------------------------------
    "binary_frame": Reason("socket", _("Only JSON text frames are accepted")),
    "frame_too_large": Reason(
        "socket", _("The message is too large to send; shorten it or send it in parts")
    ),
    "bad_json": Reason("socket", _("The frame is not valid JSON")),
    "bad_frame": Reason("socket", _("A frame must be a JSON object")),
    "unknown_type": Reason("socket", _("Unknown frame type")),
    "bad_field": Reason("socket", _("A field of the frame is missing or has the wrong type")),
    "empty_message": Reason("socket", _("The message is empty")),
    "message_too_long": Reason(
        "socket", _("The message is too long; shorten it or send it in parts")
    ),
    "unknown_session": Reason("socket", _("No such session.")),
    "unknown_agent": Reason("socket", _("No such agent.")),
    "invalid_characters": Reason(
        "socket", _("The message contains a NUL character, which cannot be stored")
    ),
    "nothing_to_stop": Reason("socket", _("Nothing is running in this chat")),
    "nothing_to_retry": Reason("socket", _("There is no failed or stopped turn to retry")),
    "turn_in_progress": Reason(
        "socket", _("The agent is still working in this chat; stop it or wait for it to finish")
    ),
    # --- regenerate, edit and their versions (issue 26 item 1) --------------------------
    "not_regenerable": Reason("socket", _("Only an answer of the agent can be regenerated.")),
    "not_editable": Reason("socket", _("Only your own messages can be edited.")),
    "inside_compacted": Reason(
        "control",
        _(
            "This part of the chat has been compacted into a summary; undo that compaction "
            "to regenerate, edit or switch versions here."
        ),
    ),
    "unknown_fork": Reason(
        "socket", _("No such set of versions in this chat's history."), http_status=404
    ),
    "unknown_version": Reason("socket", _("No such version."), http_status=404),
    # --- attachments (issue 26 item 4) ---------------------------------------------------
    "attachment_too_large": Reason(
        "request", _("The file is larger than one attachment may be."), http_status=413
    ),
    "workspace_full": Reason(
        "request",
        _("The chat's workspace has no room for this file; nothing was written."),
        http_status=413,
    ),
    "too_many_attachments": Reason("socket", _("Too many files attached to one message.")),
    "unknown_attachment": Reason(
        "socket", _("An attached file is not in this chat's workspace any more; attach it again.")
    ),
    "no_file": Reason("request", _("Choose a file to attach.")),
    # --- a chat's own model (issue 26 item 3) -------------------------------------------
    "unknown_channel": Reason("socket", _("No such enabled model channel."), http_status=404),
    "history_too_large": Reason(
        "control",
        _(
            "This chat's history is over the new model's compaction threshold: compact it "
            "for that model first, or choose a model with a larger window."
        ),
    ),
    "compaction_timeout": Reason(
        "compaction", _("The compaction did not finish in time; the chat keeps its model.")
    ),
}

# An HTTP request refused before a view's own logic (``{"error", "reason"}`` bodies).
REASONS.update(
    {
        "login_locked": Reason(
            "request", _("Too many failed logins for this account or from this address.")
        ),
        "token_expired": Reason("request", _("The API token has expired; request a new one.")),
        "request_too_large": Reason("request", _("The request body is too large.")),
        "server_error": Reason(
            "request", _("The server could not answer this request; try again later.")
        ),
    }
)

# A failed turn names the model channel to check (``turn_failure``).
CHECK_CHANNEL = _("Check the model channel “%(channel)s” (%(model)s).")


# The HTTP status of a REST answer failing with a reason of this kind (``{"error", "reason"}``),
# unless the reason names its own: 422 the session or its configuration must change first;
# 502 a model failed; 500 the server failed; 400 the request was refused; 409 an undo or an
# edit of a compaction no longer in effect.
_KIND_HTTP_STATUS: dict[ReasonKind, int] = {
    "compaction": 422,
    "provider": 502,
    "turn": 500,
    "socket": 400,
    "request": 400,
    "control": 409,  # an undo or an edit of what is no longer in effect (issue 17)
}


def http_status(reason: str | None) -> int:
    """The HTTP status of a REST answer failing with ``reason`` (500 for an unknown one)."""
    known = REASONS.get(reason or "")
    if known is None:
        return 500
    return known.http_status or _KIND_HTTP_STATUS[known.kind]


def codes(*kinds: ReasonKind) -> frozenset[str]:
    """The reason codes of these kinds."""
    return frozenset(code for code, reason in REASONS.items() if reason.kind in kinds)


# What a compaction can end with (``CompactionOutcome.reason``): its own reasons and a failed
# summary call's.
COMPACTION_OUTCOMES = codes("compaction", "provider")

_HTTP_STATUS = re.compile(r"\s*\(HTTP (\d{3})\)")


def message(reason: str) -> str:
    """The message of a known ``reason`` in the active language."""
    return str(REASONS[reason].message)


def wire_text(reason: str, detail: str = "") -> str:
    """ "中文 (English)" for a known ``reason``, with ``detail`` after a colon; the same in
    every active language (it is stored, and read by programs and in logs)."""
    text = REASONS[reason].message
    with translation.override(SEED_LANGUAGE):
        seed = str(text)
    with translation.override("en"):
        english = str(text)
    both = seed if seed == english else f"{seed} ({english})"
    return f"{both}: {detail}" if detail else both


def user_text(reason: str | None, error: str) -> str:
    """What a page shows for an ``error`` with this ``reason``, in the active language.

    A model failure keeps the provider's status and own words (``llm.LLMError``'s text is
    "<head> (HTTP n): <detail>"); an unknown reason shows ``error`` as it is."""
    known = REASONS.get(reason or "")
    if known is None:
        return error
    if known.kind != "provider":
        return str(known.message)
    status = _HTTP_STATUS.search(error)
    _sentence, colon, detail = _HTTP_STATUS.sub("", error).partition(": ")
    text = str(known.message)
    if status:
        text = gettext("%(what)s (HTTP %(status)s)") % {"what": text, "status": status.group(1)}
    if colon and detail.strip():
        text = gettext("%(what)s: %(detail)s") % {"what": text, "detail": detail.strip()}
    return text


@dataclass(frozen=True, slots=True)
class TurnFailure:
    """What a failed chat turn's record says: the reason, the provider's HTTP status and its
    own words when it sent any (never an exception's class name), the channel to check."""

    reason: str
    status: str = ""
    detail: str = ""
    channel: str = ""
    model: str = ""

    @classmethod
    def of(cls, reason: str, error: str, *, channel: str = "", model: str = "") -> TurnFailure:
        """From a failed model call's text ("<head> (HTTP n): <detail>", ``llm.LLMError``):
        the detail only when the provider answered with a status (its own words); a
        connection error's detail is the name of an exception class."""
        known = REASONS.get(reason)
        reason = (
            reason
            if known is not None and known.kind in {"provider", "turn"}
            else ("internal_error")
        )
        status = _HTTP_STATUS.search(error) if REASONS[reason].kind == "provider" else None
        detail = ""
        if status:
            _head, colon, rest = _HTTP_STATUS.sub("", error).partition(": ")
            detail = rest.strip() if colon else ""
        return cls(reason, status.group(1) if status else "", detail, channel, model)

    def _text(self) -> str:
        text = str(REASONS[self.reason].message)
        if self.status:
            text = gettext("%(what)s (HTTP %(status)s)") % {"what": text, "status": self.status}
        if self.detail:
            text = gettext("%(what)s: %(detail)s") % {"what": text, "detail": self.detail}
        if self.channel and REASONS[self.reason].kind == "provider":
            check = str(CHECK_CHANNEL) % {"channel": self.channel, "model": self.model}
            text = gettext("%(what)s. %(check)s") % {"what": text.rstrip(".。"), "check": check}
        return text

    def user_text(self) -> str:
        """In the active language (the page)."""
        return self._text()

    def wire_text(self) -> str:
        """ "中文 (English)", whatever the active language (stored, sent to programs)."""
        with translation.override(SEED_LANGUAGE):
            seed = self._text()
        with translation.override("en"):
            english = self._text()
        return seed if seed == english else f"{seed} ({english})"
