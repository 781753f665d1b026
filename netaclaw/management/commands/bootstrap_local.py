"""`make run`'s first step: admin account, demo agent, and how to log in."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from netaclaw.bootstrap import CHANNEL_HELP, bootstrap


class Command(BaseCommand):
    help = "Make sure a local admin account and the demo agent exist; print how to log in."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="Where the server runs.")

    def handle(self, *args: Any, url: str, **options: Any) -> None:
        report = bootstrap()
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(f"NetaClaw is starting: {url}/accounts/login/"))
        self.stdout.write(f"  user name: {report.username}")
        if report.password:
            self.stdout.write(f"  password:  {report.password}")
        else:
            self.stdout.write(
                "  password:  (set earlier and not on file; reset it with "
                f"`python manage.py changepassword {report.username}`)"
            )
        self.stdout.write(f"  (kept in {report.password_file}, readable only by you)")
        for channel in report.channels_created:
            self.stdout.write(f"  model channel added from the environment: {channel}")
        if not report.has_channel:
            self.stdout.write("")
            self.stdout.write(self.style.WARNING(CHANNEL_HELP))
