"""URLs of the REST API, mounted at ``/api/`` (CONTRACT §4)."""

from __future__ import annotations

from django.urls import path

from web import (
    api,
    api_attachments,
    api_branches,
    api_chat_files,
    api_compactions,
    api_context,
    api_search,
    api_usage,
)

app_name = "api"

urlpatterns = [
    path("auth/token/", api.TokenLoginView.as_view(), name="auth-token"),
    path("sessions/", api.SessionListView.as_view(), name="session-list"),
    path("search/", api_search.ChatSearchView.as_view(), name="search"),
    path("sessions/import/", api_chat_files.SessionImportView.as_view(), name="session-import"),
    path("sessions/<str:session_id>/", api.SessionDetailView.as_view(), name="session-detail"),
    path(
        "sessions/<str:session_id>/export/",
        api_chat_files.SessionExportView.as_view(),
        name="session-export",
    ),
    path(
        "sessions/<str:session_id>/messages/",
        api.SessionMessagesView.as_view(),
        name="session-messages",
    ),
    path(
        "sessions/<str:session_id>/messages/<int:message_id>/",
        api_compactions.SessionMessageView.as_view(),  # GET, and PATCH (issue 17)
        name="session-message",
    ),
    path(
        "sessions/<str:session_id>/messages/<int:message_id>/regenerate/",
        api_branches.MessageRegenerateView.as_view(),
        name="session-message-regenerate",
    ),
    path(
        "sessions/<str:session_id>/messages/<int:message_id>/edit/",
        api_branches.MessageEditView.as_view(),
        name="session-message-edit",
    ),
    path(
        "sessions/<str:session_id>/attachments/",
        api_attachments.SessionAttachmentsView.as_view(),
        name="session-attachments",
    ),
    path(
        "sessions/<str:session_id>/forks/",
        api_branches.SessionForksView.as_view(),
        name="session-forks",
    ),
    path(
        "sessions/<str:session_id>/forks/<int:fork_id>/select/",
        api_branches.ForkSelectView.as_view(),
        name="session-fork-select",
    ),
    path(
        "sessions/<str:session_id>/compact/",
        api.SessionCompactView.as_view(),
        name="session-compact",
    ),
    path(
        "sessions/<str:session_id>/compact/previews/<int:preview_id>/",
        api_compactions.SessionCompactionPreviewView.as_view(),  # DELETE (issue 17)
        name="session-compact-preview",
    ),
    path(
        "sessions/<str:session_id>/compact/previews/<int:preview_id>/accept/",
        api_compactions.SessionCompactionPreviewAcceptView.as_view(),
        name="session-compact-preview-accept",
    ),
    path(
        "sessions/<str:session_id>/context/",
        api_context.SessionContextView.as_view(),
        name="session-context",
    ),
    path(
        "sessions/<str:session_id>/compactions/",
        api_compactions.SessionCompactionsView.as_view(),
        name="session-compactions",
    ),
    path(
        "sessions/<str:session_id>/compactions/<int:record_id>/",
        api_compactions.SessionCompactionDetailView.as_view(),
        name="session-compaction",
    ),
    path(
        "sessions/<str:session_id>/compactions/<int:record_id>/undo/",
        api_compactions.SessionCompactionUndoView.as_view(),
        name="session-compaction-undo",
    ),
    path(
        "sessions/<str:session_id>/usage/",
        api_usage.SessionUsageView.as_view(),
        name="session-usage",
    ),
    path("usage/", api_usage.UserUsageView.as_view(), name="usage"),
    path("agents/", api.AgentListView.as_view(), name="agent-list"),
    path("agents/<int:agent_id>/", api.AgentDetailView.as_view(), name="agent-detail"),
    path("model-channels/", api.ModelChannelListView.as_view(), name="channel-list"),
    path(
        "model-channels/<int:channel_id>/",
        api.ModelChannelDetailView.as_view(),
        name="channel-detail",
    ),
    path(
        "model-channels/<int:channel_id>/test/",
        api.ModelChannelTestView.as_view(),
        name="channel-test",
    ),
    path(
        "model-channels/<int:channel_id>/default-auxiliary/",
        api.ModelChannelDefaultAuxiliaryView.as_view(),
        name="channel-default-auxiliary",
    ),
    path("dict-info/", api.DictInfoListView.as_view(), name="dict-list"),
    path("dict-info/<int:entry_id>/", api.DictInfoDetailView.as_view(), name="dict-detail"),
    path("schema/", api.SchemaView.as_view(), name="schema"),
]
