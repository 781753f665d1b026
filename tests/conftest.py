"""Suite-wide fixtures: real services when configured, a clean channel layer per test."""

from __future__ import annotations

import os

import pytest
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


@pytest.fixture
async def channel_layer():
    """The configured layer, flushed after the test (Redis keys carry our prefix)."""
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    yield layer
    if hasattr(layer, "flush"):
        await layer.flush()
