"""Fixtures of the reliability tests (fault matrix, storage, fuzzing, security).

Their helpers are shared with the other tests, in tests/support: the socket helpers
(``sockets``, the real ASGI stack in-process: auth, origin check, routing, consumer,
gateway, channel layer), stored histories (``history``), the scripted summaries
(``summaries``), checks of server frames (``frames``) and of HTML (``html_audit``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from asgiref.sync import async_to_sync

# Importing the ASGI app runs django.setup() again, which re-applies LOGGING and drops
# every handler pytest's caplog attached; do it once at collection, never inside a test.
import netaclaw.asgi  # noqa: F401


@pytest.fixture(autouse=True)
def _fresh_channel_layer() -> Iterator[None]:
    """A new channel-layer instance per test.

    Each async test runs on its own event loop, but ``get_channel_layer()`` caches one
    instance per process. channels-redis keeps asyncio locks in it; a consumer that was
    receiving when a test's loop closed leaves its lock held and bound to that dead
    loop, and the next test's consumers then fail with "Lock … is bound to a different
    event loop" (or hang). Production runs one loop per process, so this is test-only.
    """
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    layer = channel_layers.backends.get("default")
    if layer is not None and hasattr(layer, "flush"):  # Redis: drop this test's groups too
        async_to_sync(layer.flush)()
    channel_layers.backends.clear()
