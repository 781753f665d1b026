from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SystemConfig(AppConfig):
    """The system dictionary (the seed's dict_type / dict_info). Its label stays ``netaclaw``,
    the app it was born in, so its tables and migrations are unchanged."""

    name = "system"
    label = "netaclaw"
    verbose_name = _("System")
