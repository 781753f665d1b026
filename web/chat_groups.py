"""The chat list grouped by date, as ChatGPT and Open WebUI group it (issue 26 item 2):
Today, Yesterday, Previous 7 days, Previous 30 days, then one group per month."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from django.utils import formats, timezone
from django.utils.translation import gettext_lazy as _


@dataclass
class DateGroup:
    key: str  # "today", "yesterday", "week", "month", or "YYYY-MM"
    label: Any  # a lazy translation, or the month's name
    sessions: list[Any] = field(default_factory=list)


_RECENT = (
    ("today", _("Today"), 0),
    ("yesterday", _("Yesterday"), 1),
    ("week", _("Previous 7 days"), 7),
    ("month", _("Previous 30 days"), 30),
)


def group_key(day: date, today: date) -> str:
    """Which group a chat last active on ``day`` belongs to, seen on ``today``."""
    age = (today - day).days
    for key, _label, days in _RECENT:
        if age <= days:
            return key
    return f"{day.year:04d}-{day.month:02d}"


def by_date(sessions: Iterable[Any], *, now: datetime | None = None) -> list[DateGroup]:
    """``sessions`` (newest first, each with ``updated_at``) in date groups, in the current
    time zone; the Today group always comes first, empty or not (a chat started on the
    page goes there)."""
    today = timezone.localdate(now or timezone.now())
    labels = {key: label for key, label, _days in _RECENT}
    groups: dict[str, DateGroup] = {"today": DateGroup("today", labels["today"])}
    for session in sessions:
        day = timezone.localdate(session.updated_at)
        key = group_key(day, today)
        if key not in groups:
            label = labels.get(key) or formats.date_format(day, "YEAR_MONTH_FORMAT")
            groups[key] = DateGroup(key, label)
        groups[key].sessions.append(session)
    return list(groups.values())
