"""Notes before compaction (issue 18 item 5): the agent writes its own notes, kept verbatim.

When the agent's ``compaction_notes`` is on, an automatic compaction first gives the agent's
own model one bounded step (no tools, ``NOTES_MAX_TOKENS`` of output, the auxiliary
timeout) in which it writes what it must not lose: the notes go to ``NOTES.md`` in the
session's workspace (where its file tools can read them) and into the summary's metadata,
from where every later context re-injects them verbatim right after the summary, and every
later compaction carries them on (``compaction.continuity``). A failed step costs nothing but the notes: the compaction goes on.
"""

from __future__ import annotations

import logging

from django.conf import settings

import condense as core
from agents.llm_channels import channel_config
from agents.models import ChatSession
from agents.tools.registry import ToolError
from agents.tools.workspace import Workspace, session_workspace_root
from llm import LLMError, LLMRequest, get_provider

logger = logging.getLogger(__name__)

NOTES_FILE = "NOTES.md"
NOTES_MAX_TOKENS = 1024  # the step's output cap
NOTES_MAX_CHARS = 6000  # what is kept of a reply that ignored the length asked for

_ASK = {
    "zh": (
        "本对话较早的部分即将被压缩为摘要。在此之前，请为自己写下需要长期保留的笔记："
        "目标、已做的决定及其原因、之后还会用到的事实和数值（路径、名称、数字、命令）、"
        "已完成的工作和下一步。这些笔记会原样保留在摘要之后，并保存到工作区的 NOTES.md。"
        "只回复笔记本身，不超过 300 字。"
    ),
    "en": (
        "The earlier part of this conversation is about to be compacted into a summary. "
        "Before that, write durable notes for yourself: the goal, the decisions made and "
        "why, the facts and values you will need later (paths, names, numbers, commands), "
        "what is done and what comes next. They are kept verbatim after the summary and "
        "saved to NOTES.md in your workspace. Reply with the notes only, in at most 300 "
        "words."
    ),
}


def write_notes(session: ChatSession, messages: list[core.Message]) -> str:
    """One bounded step of the agent's model over ``messages`` (the context about to be
    compacted); returns the notes ('' when the step failed or wrote nothing)."""
    channel = session.channel
    if channel is None:
        return ""
    language = core.detect_language(messages)
    context, _dropped = core.repair_tool_pairing(messages)
    ask = core.Message(role="user", content=_ASK["zh" if language == "zh" else "en"])
    provider = get_provider(
        channel_config(
            channel,
            timeout_seconds=float(settings.NETACLAW["AUXILIARY_TIMEOUT_SECONDS"]),
            max_retries=0,
        )
    )
    try:
        completion = provider.complete(
            LLMRequest(messages=(*context, ask), max_tokens=NOTES_MAX_TOKENS)
        )
    except LLMError as exc:
        logger.info("no notes before the compaction of %s: %s", session.pk, exc.reason)
        return ""
    notes = completion.text.strip()[:NOTES_MAX_CHARS]
    if not notes:
        return ""
    try:
        Workspace(session_workspace_root(session.pk)).write_file(NOTES_FILE, notes + "\n")
    except ToolError as exc:  # a full workspace keeps the notes in the context all the same
        logger.info("notes of %s not saved to %s: %s", session.pk, NOTES_FILE, exc)
    return notes
