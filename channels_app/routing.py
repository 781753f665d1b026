from __future__ import annotations

from django.urls import path

from channels_app.consumers import ChatConsumer, ChatHtmlConsumer

websocket_urlpatterns = [
    path("ws/chat/", ChatConsumer.as_asgi()),
    path("ws/chat/html/", ChatHtmlConsumer.as_asgi()),
]
