"""System checks for settings that are fine on a laptop and unsafe in production."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register


@register(Tags.security, deploy=False)
def check_production_settings(app_configs: Any = None, **kwargs: Any) -> list:
    if settings.DEBUG:
        return []
    # DJANGO_DEBUG=0 without DJANGO_SECRET_KEY never gets here: the settings refuse to load.
    problems: list = []
    backend = str(settings.CHANNEL_LAYERS.get("default", {}).get("BACKEND", ""))
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


@register()
def check_frame_limits(app_configs: Any = None, **kwargs: Any) -> list:
    """A client frame over Daphne's limit drops the connection before the consumer can
    answer it: NETACLAW_MAX_FRAME_BYTES must stay well under it (issue 14)."""
    frame = settings.NETACLAW["MAX_FRAME_BYTES"]
    daphne = getattr(settings, "DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE", 1024 * 1024)
    if frame < daphne:
        return []
    return [
        Error(
            f"NETACLAW_MAX_FRAME_BYTES ({frame}) is not below Daphne's WebSocket message "
            f"limit ({daphne}): a frame between the two closes the socket with no error.",
            hint="Lower NETACLAW_MAX_FRAME_BYTES, or raise DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE "
            "together with daphne's --websocket-max-message-size.",
            id="netaclaw.E002",
        )
    ]
