"""Fixtures of the WebSocket tests (their helpers are in tests/support/sockets.py)."""

from __future__ import annotations

import pytest


@pytest.fixture
async def flushed_layer(channel_layer):
    yield channel_layer
