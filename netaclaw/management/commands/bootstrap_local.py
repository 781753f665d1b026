"""The first-run set-up of `make run` on its own: admin account, demo agent, how to log in
(`run_local` does the same, then serves, and prints how to log in once the port is open)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, OutputWrapper
from django.core.management.color import Style

from netaclaw.bootstrap import CHANNEL_HELP, BootstrapReport, bootstrap


def write_login(out: OutputWrapper, style: Style, report: BootstrapReport, url: str) -> None:
    """Where to log in, with which account, and what to set up first."""
    out.write(style.SUCCESS(f"Log in at {url}/accounts/login/"))
    out.write(f"  user name: {report.username}")
    if report.password:
        out.write(f"  password:  {report.password}")
    else:
        out.write(
            "  password:  (set earlier and not on file; reset it with "
            f"`python manage.py changepassword {report.username}`)"
        )
    out.write(f"  (kept in {report.password_file}, readable only by you)")
    for channel in report.channels_created:
        out.write(f"  model channel added from the environment: {channel}")
    if not report.has_channel:
        out.write("")
        out.write(style.WARNING(CHANNEL_HELP))


class Command(BaseCommand):
    help = "Make sure a local admin account and the demo agent exist; print how to log in."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="Where the server runs.")

    def handle(self, *args: Any, url: str, **options: Any) -> None:
        report = bootstrap()
        self.stdout.write("")
        write_login(self.stdout, self.style, report, url)
