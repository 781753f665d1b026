"""Configuration pages: /agents/ (everyone, own or shared agents) and /channels/ (staff)."""

from __future__ import annotations

from django.urls import path

from web import config_views

app_name = "config"

urlpatterns = [
    path("agents/", config_views.agent_list, name="agent_list"),
    path("agents/<int:agent_id>/", config_views.agent_edit, name="agent_edit"),
    path("channels/", config_views.channel_list, name="channel_list"),
    path("channels/new/", config_views.channel_new, name="channel_new"),
    path("channels/<int:channel_id>/", config_views.channel_edit, name="channel_edit"),
]
