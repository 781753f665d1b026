"""URLs of the REST API, mounted at ``/api/`` (CONTRACT §4)."""

from __future__ import annotations

from django.urls import path

from web import api

app_name = "api"

urlpatterns = [
    path("auth/token/", api.TokenLoginView.as_view(), name="auth-token"),
    path("sessions/", api.SessionListView.as_view(), name="session-list"),
    path("sessions/<str:session_id>/", api.SessionDetailView.as_view(), name="session-detail"),
    path(
        "sessions/<str:session_id>/messages/",
        api.SessionMessagesView.as_view(),
        name="session-messages",
    ),
    path(
        "sessions/<str:session_id>/messages/<int:message_id>/",
        api.SessionMessageDetailView.as_view(),
        name="session-message",
    ),
    path("sessions/<str:session_id>/compact/", api.session_compact, name="session-compact"),
    path("agents/", api.AgentListView.as_view(), name="agent-list"),
    path("agents/<int:agent_id>/", api.AgentDetailView.as_view(), name="agent-detail"),
    path("model-channels/", api.ModelChannelListView.as_view(), name="channel-list"),
    path(
        "model-channels/<int:channel_id>/",
        api.ModelChannelDetailView.as_view(),
        name="channel-detail",
    ),
    path("dict-info/", api.DictInfoListView.as_view(), name="dict-list"),
    path("dict-info/<int:entry_id>/", api.DictInfoDetailView.as_view(), name="dict-detail"),
    path("schema/", api.SchemaView.as_view(), name="schema"),
]
