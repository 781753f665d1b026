from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CompactionConfig(AppConfig):
    name = "compaction"
    verbose_name = _("Context compaction")
