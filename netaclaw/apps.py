from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class NetaclawConfig(AppConfig):
    name = "netaclaw"
    label = "project"  # "netaclaw" is the system dictionary's label (``system.apps``)
    verbose_name = _("Project")

    def ready(self) -> None:
        from netaclaw import checks  # noqa: F401  (registers the system checks)
