"""A turn whose runner went away (issue 24 item 3; CONTRACT §8).

Whatever ran a turn may stop before the turn does: its worker is shut down past its grace
period, or dies (kill -9, a lost machine). The turn is then recorded as *interrupted*: every
tool call it made that has no result gets one saying so (a tool step is never run twice by
itself: the model decides, knowing it may have run in part), the partial answer it was
streaming is not kept (the replay log had it for the pages), and a ``turn_event`` record
with ``status: "interrupted"`` says what happened, with Retry.

Then the runner answers it again, once, by itself (``runs``): the history is whole, so the
run continues from its last stored step. Chosen over a bare Retry because a deploy sends
SIGTERM to every worker in turn: a user should not have to notice. A turn interrupted a
second time waits for the user's Retry, so a turn that kills its worker cannot loop.
"""

from __future__ import annotations

from typing import Any

from agents import services
from agents.event_records import EventRecord
from agents.message_format import message_to_json
from agents.models import SYSTEM_TYPE_TURN, ChatSession, Message, Role
from agents.reasons import wire_text
from agents.selectors import model_visible
from condense.types import ToolCall

INTERRUPTED_TOOL_RESULT = (
    "The run was interrupted before this tool call finished (the process running it "
    "stopped); it may have run in part. It is not run again by itself."
)
AUTO_CONTINUE_ATTEMPTS = 1  # interrupted turns answered again by themselves


def open_calls_of(session: ChatSession) -> list[ToolCall]:
    """The tool calls of the session's last answer that have no result stored."""
    last_user = model_visible(session=session).filter(role=Role.USER).order_by("-position")
    since = last_user.values_list("position", flat=True).first() or 0
    rows = list(model_visible(session=session).filter(position__gt=since).order_by("position"))
    answered = {m.tool_call_id for m in rows if m.role == Role.TOOL}
    calls = []
    for message in rows:
        for call in message.tool_calls or ():
            if message.role == Role.ASSISTANT and call.get("id") not in answered:
                calls.append(
                    ToolCall(str(call.get("id")), str(call.get("name")), call.get("arguments", ""))
                )
    return calls


def record_interruption(
    session: ChatSession, *, attempt: int, open_calls: list[ToolCall] | None = None
) -> list[dict[str, Any]]:
    """Store the interruption (``open_calls``: known by the runner that is stopping; read
    from the history when it died). Returns the stored messages as the socket sends them."""
    if open_calls is None:
        open_calls = open_calls_of(session)
    stored: list[Message] = [
        services.message_append(
            session=session,
            role=Role.TOOL,
            content=INTERRUPTED_TOOL_RESULT,
            tool_call_id=call.id,
            metadata={"toolName": call.name, "isError": True, "interrupted": True},
        )
        for call in open_calls
    ]
    record = EventRecord(
        SYSTEM_TYPE_TURN,
        "interrupted",
        reason="interrupted",
        error=wire_text("interrupted"),
        attempt=attempt,
    )
    stored.append(services.turn_event_append(session=session, record=record))
    return [message_to_json(m) for m in stored]


def continues_by_itself(attempt: int) -> bool:
    return attempt < AUTO_CONTINUE_ATTEMPTS
