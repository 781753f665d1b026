from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db import connections
from django.db.models.signals import post_migrate
from django.utils.translation import gettext_lazy as _

from recall import index


def _restore_triggers(sender: Any, using: str = "default", **kwargs: Any) -> None:
    """After every ``migrate``: a SQLite table rebuild of ``agents_message`` (Django's way
    to alter a SQLite table) drops the index's triggers; put them back."""
    index.ensure_sqlite_triggers(connections[using])


class RecallConfig(AppConfig):
    name = "recall"
    verbose_name = _("Recall of compacted history")

    def ready(self) -> None:
        # the recall tools need the app registry (their models): imported here
        from agents.tools.catalog import register_session_tools
        from recall.tools import recall_tools

        post_migrate.connect(_restore_triggers, sender=self, dispatch_uid="recall_triggers")
        register_session_tools(recall_tools)  # every turn binds them, the meter counts them
