from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = _("Runs (turns and compactions as jobs)")

    def ready(self) -> None:
        # the runner needs the app registry (its jobs' models): imported here
        from compaction import background
        from runs.runner import start_preparation

        background.register_starter(start_preparation)  # preparations run as jobs
