"""Pytest fixtures for the scripted LLM server (registered in tests/conftest.py).

Function-scoped on purpose: a fresh server on a fresh port per test costs about a
millisecond to start and ~10 ms to stop, and a request left over from an earlier
test (a background task, an SDK retry) then hits a closed port instead of eating
this test's scripted replies.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scripted_llm import ScriptedLLMServer


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    """A started ScriptedLLMServer, stopped after the test."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def background_compaction(settings) -> Iterator[None]:
    """Background compaction on (tests/settings.py turns it off elsewhere); afterwards every
    preparation started has ended and nothing prepared is left for the next test."""
    from compaction import background

    settings.NETACLAW = {**settings.NETACLAW, "BACKGROUND_COMPACTION": True}
    yield
    background.settle(timeout=30)
