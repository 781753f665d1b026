from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WebConfig(AppConfig):
    """Pages, forms, the REST API, the admin and the templates' helpers."""

    name = "web"
    verbose_name = _("Web")
