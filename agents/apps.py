from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_delete
from django.utils.translation import gettext_lazy as _


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = _("Agents and chats")

    def ready(self) -> None:
        # these modules' models need the app registry: imported here
        from agents import accounts, services
        from agents.models import ChatSession

        accounts.connect_receivers()
        post_delete.connect(
            services.workspace_remove_on_delete,
            sender=ChatSession,
            dispatch_uid="agents.session_workspace",
        )
