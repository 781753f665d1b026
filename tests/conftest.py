"""Suite-wide fixtures: real services when configured, a clean channel layer per test."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings

pytest_plugins = ["tests.support.fixtures"]

REQUIRE_SERVICES = os.environ.get("NETACLAW_REQUIRE_SERVICES") == "1"


def _django_active(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("django")


def pytest_configure(config: pytest.Config) -> None:
    if REQUIRE_SERVICES and _django_active(config):
        engine = settings.DATABASES["default"]["ENGINE"]
        if "postgresql" not in engine:
            raise pytest.UsageError(
                f"NETACLAW_REQUIRE_SERVICES=1 but the database engine is {engine}"
            )
        if not settings.REDIS_URL:
            raise pytest.UsageError("NETACLAW_REQUIRE_SERVICES=1 but REDIS_URL is not set")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked redis/postgres skip on the zero-setup default — never under CI."""
    if not _django_active(config):
        return
    is_pg = "postgresql" in settings.DATABASES["default"]["ENGINE"]
    for item in items:
        if "redis" in item.keywords and not settings.REDIS_URL:
            if REQUIRE_SERVICES:
                raise pytest.UsageError(f"{item.nodeid} needs REDIS_URL")
            item.add_marker(pytest.mark.skip(reason="needs REDIS_URL"))
        if "postgres" in item.keywords and not is_pg:
            if REQUIRE_SERVICES:
                raise pytest.UsageError(f"{item.nodeid} needs PostgreSQL")
            item.add_marker(pytest.mark.skip(reason="needs DATABASE_URL=postgres://…"))


@pytest.fixture(autouse=True)
def _isolated_var_dir(request, tmp_path):
    """Workspaces and credential files of a test go to its own folder."""
    if not _django_active(request.config):
        return
    settings = request.getfixturevalue("settings")
    settings.VAR_DIR = tmp_path / "var"
    settings.NETACLAW = {**settings.NETACLAW, "WORKSPACE_ROOT": tmp_path / "var" / "workspaces"}


@pytest.fixture(autouse=True)
def _fresh_channel_layer(request) -> Iterator[None]:
    """A new channel-layer instance per test.

    Each async test runs on its own event loop, but ``get_channel_layer()`` caches one
    instance per process. channels-redis keeps asyncio locks in it; a consumer that was
    receiving when a test's loop closed leaves its lock held and bound to that dead
    loop, and the next test's consumers then fail with "Lock … is bound to a different
    event loop" (or hang). Production runs one loop per process, so this is test-only.
    """
    if not _django_active(request.config):
        yield
        return
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    layer = channel_layers.backends.get("default")
    if layer is not None and hasattr(layer, "flush") and not _loop_running():
        async_to_sync(layer.flush)()  # Redis: drop this test's groups too
    channel_layers.backends.clear()


def _loop_running() -> bool:
    """A loop runs in this thread (Playwright's sync API): no ``async_to_sync`` here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@pytest.fixture
async def channel_layer():
    """The configured layer, flushed after the test (Redis keys carry our prefix)."""
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    yield layer
    if hasattr(layer, "flush"):
        await layer.flush()
