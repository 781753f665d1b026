"""Print a session's messages as one JSON list (OpenAI format plus compaction fields)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from agents.transfer import SessionIOError, session_by_id, session_export


class Command(BaseCommand):
    help = "Export a session's messages as JSON on stdout."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("session_id")
        parser.add_argument("--view", choices=["compacted", "full"], default="compacted")

    def handle(self, *args: Any, session_id: str, view: str, **options: Any) -> None:
        try:
            data = session_export(session=session_by_id(session_id), view=view)
        except SessionIOError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(json.dumps(data, ensure_ascii=False, indent=1))
