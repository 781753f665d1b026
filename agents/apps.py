from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = _("Agents and chats")

    def ready(self) -> None:
        from agents import accounts  # its models need the app registry: imported here

        accounts.connect_receivers()
