"""System checks for settings that are fine on a laptop and unsafe in production."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register


@register(Tags.security, deploy=False)
def check_production_settings(app_configs: Any = None, **kwargs: Any) -> list:
    if settings.DEBUG:
        return []
    problems: list = []
    if getattr(settings, "SECRET_KEY_IS_GENERATED", False):
        problems.append(
            Error(
                "DJANGO_DEBUG=0 but DJANGO_SECRET_KEY is not set: the generated dev key is in use.",
                hint="Set DJANGO_SECRET_KEY to a long random value.",
                id="netaclaw.E001",
            )
        )
    backend = settings.CHANNEL_LAYERS.get("default", {}).get("BACKEND", "")
    if backend.endswith("InMemoryChannelLayer"):
        problems.append(
            Warning(
                "DJANGO_DEBUG=0 with the in-memory channel layer: events cannot reach "
                "sockets served by another process.",
                hint="Set REDIS_URL so the channel layer is channels-redis.",
                id="netaclaw.W001",
            )
        )
    if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        problems.append(
            Warning(
                "DJANGO_DEBUG=0 with SQLite: several server processes cannot share it safely.",
                hint="Set DATABASE_URL to a PostgreSQL database.",
                id="netaclaw.W002",
            )
        )
    return problems
