"""Fixtures of the reliability tests (fault matrix, storage, fuzzing, security).

Their helpers are shared with the other tests, in tests/support: the socket helpers
(``sockets``, the real ASGI stack in-process: auth, origin check, routing, consumer,
gateway, channel layer), stored histories (``history``), the scripted summaries
(``summaries``), checks of server frames (``frames``) and of HTML (``html_audit``).
"""

from __future__ import annotations

# Importing the ASGI app runs django.setup() again, which re-applies LOGGING and drops
# every handler pytest's caplog attached; do it once at collection, never inside a test.
import netaclaw.asgi  # noqa: F401
