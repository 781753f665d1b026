"""Configuration pages: /agents/ (everyone: own agents, shared ones to read) and /channels/
(staff)."""

from __future__ import annotations

from django.urls import path

from web import config_views

app_name = "config"

urlpatterns = [
    path("agents/", config_views.agent_list, name="agent_list"),
    path("agents/new/", config_views.agent_new, name="agent_new"),
    path("agents/<int:agent_id>/", config_views.agent_edit, name="agent_edit"),
    path("agents/<int:agent_id>/delete/", config_views.agent_remove, name="agent_delete"),
    path(
        "agents/of-chat/<uuid:session_id>/",
        config_views.agent_of_session,
        name="agent_of_session",
    ),
    path("channels/", config_views.channel_list, name="channel_list"),
    path("channels/new/", config_views.channel_new, name="channel_new"),
    path("channels/<int:channel_id>/", config_views.channel_edit, name="channel_edit"),
    path("channels/<int:channel_id>/test/", config_views.channel_test_view, name="channel_test"),
    path(
        "channels/<int:channel_id>/default-auxiliary/",
        config_views.channel_make_default,
        name="channel_make_default",
    ),
]
