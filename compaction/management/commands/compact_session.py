"""Compact one session now (reason manual), through the one entry `/compact` uses too."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from agents.transfer import SessionIOError, session_by_id
from compaction.request import CompactionRequest
from compaction.run import compact
from compaction.run import dry_run as dry_run_plan


class Command(BaseCommand):
    help = "Compact one chat session now; --dry-run shows what would happen."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("session_id")
        parser.add_argument(
            "--dry-run", action="store_true", help="plan only: no model call, no writes"
        )
        parser.add_argument("--instructions", default=None, help="what the summary should focus on")
        parser.add_argument("--json", action="store_true", help="print one JSON object last")

    def handle(
        self,
        *args: Any,
        session_id: str,
        dry_run: bool,
        instructions: str | None,
        json: bool,
        **options: Any,
    ) -> None:
        try:
            session = session_by_id(session_id)
        except SessionIOError as exc:
            raise CommandError(str(exc)) from None
        if dry_run:
            report = dry_run_plan(session)
            self.stdout.write(
                f"{report.status}: {report.message_count} messages; would summarize "
                f"{report.summarized_count} and prune {report.pruned_count}; "
                f"{report.chunk_count} part(s), {report.request_count} request(s) in "
                f"{report.round_trips} round trip(s); tokens {report.tokens_before} → "
                f"~{report.tokens_after} (target {report.target_tokens})"
            )
            result = {
                "session_id": str(session.pk),
                "removed_count": report.summarized_count,
                "summary_message_id": None,
                "tokens_before": report.tokens_before,
                "tokens_after": report.tokens_after,
            }
        else:

            def progress(index: int, count: int) -> None:
                self.stderr.write(f"summarizing chunk {index}/{count}…")

            outcome = compact(
                CompactionRequest(
                    str(session.pk),
                    instructions=instructions,
                    progress=progress,
                    trigger="command",
                )
            )
            if outcome.status != "done":
                raise CommandError(f"{outcome.reason}: {outcome.error}")
            self.stdout.write(
                f"compacted: removed {outcome.removed_count} messages, tokens "
                f"{outcome.tokens_before} → {outcome.tokens_after}"
            )
            result = {
                "session_id": str(session.pk),
                "removed_count": outcome.removed_count,
                "summary_message_id": outcome.summary_message_id,
                "tokens_before": outcome.tokens_before,
                "tokens_after": outcome.tokens_after,
            }
        if json:
            self.stdout.write(_dumps(result))


def _dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False)
