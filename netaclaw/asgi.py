"""ASGI entry point: HTTP through Django, WebSocket through Channels.

``get_asgi_application()`` runs before any routing import so the app registry
is ready when consumers import models. Under Daphne a SIGTERM first drains the jobs this
process runs (``runs.shutdown``). The last step freezes the start-up heap
(``netaclaw.startup_heap``): full garbage collections stop walking it.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaclaw.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from channels_app.auth import WebSocketAuthStack  # noqa: E402
from channels_app.routing import websocket_urlpatterns  # noqa: E402
from netaclaw.startup_heap import PRODUCT_PRELOAD, freeze_startup_heap  # noqa: E402
from runs.shutdown import install_drain_on_shutdown  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": WebSocketAuthStack(URLRouter(websocket_urlpatterns)),
    }
)

install_drain_on_shutdown()  # SIGTERM: the jobs this process runs finish or record themselves
freeze_startup_heap(PRODUCT_PRELOAD)  # last: everything loaded is long-lived from here on
