from __future__ import annotations

from django.urls import path

from web import compaction_views, model_views, pin_views, views

app_name = "chat"

urlpatterns = [
    path("", views.session_list, name="index"),
    path("new/", views.session_new, name="new"),
    path("search/", views.chat_search, name="search"),
    path("import/", views.chat_import, name="import"),
    path("<uuid:session_id>/", views.session_detail, name="session"),
    path("<uuid:session_id>/rename/", views.session_rename, name="rename"),
    path("<uuid:session_id>/delete/", views.session_delete, name="delete"),
    path("<uuid:session_id>/model/", model_views.chat_model, name="model"),
    path("<uuid:session_id>/messages/", views.session_messages, name="messages"),
    path("<uuid:session_id>/messages/<int:message_id>/", views.message_detail, name="message"),
    path(
        "<uuid:session_id>/summary/<int:message_id>/",
        compaction_views.summary_detail,
        name="summary",
    ),
    path(
        "<uuid:session_id>/summary/<int:message_id>/edit/",
        compaction_views.summary_edit_page,
        name="summary_edit",
    ),
    path(
        "<uuid:session_id>/summary/<int:message_id>/pin/<int:original_id>/",
        compaction_views.dropped_pin,
        name="summary_pin",
    ),
    path(
        "<uuid:session_id>/messages/<int:message_id>/pin/",
        pin_views.message_pin_toggle,
        name="pin",
    ),
]
