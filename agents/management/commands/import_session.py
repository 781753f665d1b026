"""Create a session from a JSON list of OpenAI-format messages, or from the product's own
chat file (``export_session --as netaclaw``: summaries, records and marks kept)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from agents.transfer import SessionIOError, session_import


class Command(BaseCommand):
    help = "Import a session from an OpenAI-format JSON message list; prints its id last."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("file")
        parser.add_argument("--agent", type=int, required=True)
        parser.add_argument("--user", default=None)
        parser.add_argument("--title", default=None)

    def handle(
        self, *args: Any, file: str, agent: int, user: str | None, title: str | None, **options: Any
    ) -> None:
        try:
            session, count = session_import(
                path=Path(file), agent_id=agent, username=user, title=title
            )
        except SessionIOError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"imported {count} messages")
        self.stdout.write(str(session.pk))
