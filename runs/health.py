"""Is this process ready to serve (issue 24 item 6; CONTRACT §8 ``/readyz``)?

Ready when the database answers, Redis answers (when configured), and — with the worker
runner — a worker has been seen in the last ``WORKER_SEEN_SECONDS`` (a turn taken now would
otherwise wait for one). Nothing secret is said: only which part is missing."""

from __future__ import annotations

import redis
from django.conf import settings
from django.db import DatabaseError, connection

WORKER_SEEN_SECONDS = 30
CHECK_TIMEOUT_SECONDS = 2.0


def readiness() -> dict[str, str]:
    """Each part checked → ``ok`` or ``missing``."""
    checks = {"database": _database()}
    if settings.REDIS_URL:
        checks["redis"] = _redis(settings.REDIS_URL)
    if settings.NETACLAW["RUNNER"] == "worker":
        checks["worker"] = _worker() if checks["database"] == "ok" else "missing"
    return checks


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        return "missing"
    return "ok"


def _redis(url: str) -> str:
    client = redis.Redis.from_url(
        url, socket_timeout=CHECK_TIMEOUT_SECONDS, socket_connect_timeout=CHECK_TIMEOUT_SECONDS
    )
    try:
        client.ping()
    except redis.RedisError:
        return "missing"
    finally:
        client.close()
    return "ok"


def _worker() -> str:
    """A Procrastinate worker's heartbeat (every few seconds) in the last 30 s."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT EXISTS (SELECT 1 FROM procrastinate_workers"
                " WHERE last_heartbeat > now() - %s * interval '1 second')",
                [WORKER_SEEN_SECONDS],
            )
            seen = cursor.fetchone()
    except DatabaseError:
        return "missing"
    return "ok" if seen and seen[0] else "missing"
