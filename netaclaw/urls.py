from __future__ import annotations

from django.conf.urls.i18n import i18n_patterns  # noqa: F401  (kept for future prefixed URLs)
from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from web.accounts import LogoutWithConfirmation
from web.health import healthz, readyz
from web.openai_api import chat_completions, models

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    # the OpenAI-compatible API over the agents (README "Using NetaClaw's agents from
    # other clients"): an OpenAI client's base URL is http(s)://HOST/v1
    path("v1/chat/completions", chat_completions, name="openai-chat-completions"),
    path("v1/models", models, name="openai-models"),
    path("", RedirectView.as_view(pattern_name="chat:index", permanent=False)),
    path("accounts/logout/", LogoutWithConfirmation.as_view(), name="logout"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    path("chat/", include("web.urls")),
    path("", include("web.config_urls")),
    path("api/", include("web.api_urls")),
]
