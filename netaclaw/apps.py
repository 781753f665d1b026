from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class NetaclawConfig(AppConfig):
    name = "netaclaw"
    verbose_name = _("System")

    def ready(self) -> None:
        from netaclaw import checks  # noqa: F401  (registers the system checks)
