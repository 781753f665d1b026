"""The chat list's date groups (issue 26 item 2): boundaries at local midnight."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.test import override_settings
from django.utils import timezone

from web.chat_groups import by_date

NOW = datetime(2026, 12, 5, 0, 30, tzinfo=ZoneInfo("Asia/Shanghai"))  # just past midnight


@dataclass
class Chat:
    name: str
    updated_at: datetime


def _groups(*chats: Chat) -> list[tuple[str, list[str]]]:
    return [(g.key, [c.name for c in g.sessions]) for g in by_date(chats, now=NOW)]


@override_settings(TIME_ZONE="Asia/Shanghai")
def test_chats_fall_into_today_yesterday_week_month_and_months() -> None:
    with timezone.override("Asia/Shanghai"):
        groups = _groups(
            Chat("now", NOW - timedelta(minutes=10)),
            Chat("before midnight", NOW - timedelta(minutes=40)),
            Chat("six days", NOW - timedelta(days=6)),
            Chat("twenty days", NOW - timedelta(days=20)),
            Chat("october", datetime(2026, 10, 2, tzinfo=ZoneInfo("Asia/Shanghai"))),
            Chat("last year", datetime(2025, 12, 30, tzinfo=ZoneInfo("Asia/Shanghai"))),
        )
    assert groups == [
        ("today", ["now"]),
        ("yesterday", ["before midnight"]),
        ("week", ["six days"]),
        ("month", ["twenty days"]),
        ("2026-10", ["october"]),
        ("2025-12", ["last year"]),
    ]


def test_today_comes_first_even_when_empty() -> None:
    with timezone.override("UTC"):
        groups = _groups(Chat("old", NOW - timedelta(days=3)))
    assert groups == [("today", []), ("week", ["old"])]


def test_the_same_moment_is_today_in_one_zone_and_yesterday_in_another() -> None:
    moment = NOW - timedelta(minutes=40)  # 23:50 in Shanghai, 15:50 UTC the same UTC day
    with timezone.override("UTC"):
        assert _groups(Chat("x", moment))[0] == ("today", ["x"])
    with timezone.override("Asia/Shanghai"):
        assert _groups(Chat("x", moment))[1] == ("yesterday", ["x"])
