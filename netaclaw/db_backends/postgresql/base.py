"""PostgreSQL with the connection health check at most once a second per connection.

Channels wraps every ORM call of a socket in ``close_old_connections()``, which re-arms
Django's health check (``CONN_HEALTH_CHECKS``): a ``SELECT 1`` round trip before every
such call, two or three per chat turn. A connection checked less than a second ago is
taken as healthy; if the server went away within that second, that one call fails and
Django closes the connection after it, as it would with no health checks at all.
"""

from __future__ import annotations

import time

from django.db.backends.postgresql import base

HEALTH_CHECK_INTERVAL = 1.0  # seconds


class DatabaseWrapper(base.DatabaseWrapper):
    _checked_at = float("-inf")

    def connect(self) -> None:
        super().connect()
        self._checked_at = time.monotonic()  # a new connection is known good

    def close_if_health_check_failed(self) -> None:
        if self.health_check_enabled and not self.health_check_done:
            now = time.monotonic()
            if now - self._checked_at < HEALTH_CHECK_INTERVAL:
                self.health_check_done = True
                return
            self._checked_at = now
        super().close_if_health_check_failed()
