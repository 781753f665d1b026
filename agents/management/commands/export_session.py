"""Print a session's messages as one JSON list (OpenAI format plus compaction fields)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from agents.chat_files import export_chat
from agents.transfer import SessionIOError, session_by_id, session_export


class Command(BaseCommand):
    help = "Export a session's messages as JSON on stdout."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("session_id")
        parser.add_argument("--view", choices=["compacted", "full"], default="compacted")
        parser.add_argument(
            "--as",
            dest="kind",
            choices=["openai", "netaclaw", "markdown"],
            default="openai",
            help="openai (the default: OpenAI messages of --view), netaclaw (every message with"
            " its marks; import_session reads it back as it was) or markdown",
        )

    def handle(self, *args: Any, session_id: str, view: str, kind: str, **options: Any) -> None:
        try:
            session = session_by_id(session_id)
        except SessionIOError as exc:
            raise CommandError(str(exc)) from None
        if kind != "openai":
            self.stdout.write(export_chat(session=session, fmt=kind, view=view).body)
            return
        data = session_export(session=session, view=view)
        self.stdout.write(json.dumps(data, ensure_ascii=False, indent=1))
