"""Who may open a WebSocket (CONTRACT §5).

Browsers authenticate with the Django session cookie and must send an allowed
``Origin`` (cross-site WebSocket hijacking is the socket's CSRF). Programs send
``Authorization: Token <key>`` and may send no Origin at all — a browser page
cannot set that header, so a token is never ambient. A token with a foreign
Origin is still refused.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.security.websocket import AllowedHostsOriginValidator, WebsocketDenier
from django.contrib.auth.models import AnonymousUser


def _header(scope: dict[str, Any], name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value
    return None


def token_from_scope(scope: dict[str, Any]) -> str | None:
    raw = _header(scope, b"authorization")
    if raw is None:
        return None
    scheme, _, key = raw.decode("latin1").partition(" ")
    if scheme.lower() != "token" or not key.strip():
        return ""
    return key.strip()


@database_sync_to_async
def _user_for_token(key: str) -> Any:
    from rest_framework.authtoken.models import Token

    token = Token.objects.select_related("user").filter(key=key).first()
    if token is None or not token.user.is_active:
        return AnonymousUser()
    return token.user


class _TokenAuth:
    """Authenticates a socket by its Authorization header; refuses foreign Origins."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._origin_check = AllowedHostsOriginValidator(inner)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        key = token_from_scope(scope) or ""
        scope = dict(scope, user=await _user_for_token(key) if key else AnonymousUser())
        origin = _header(scope, b"origin")
        if origin is not None:
            if not self._origin_check.valid_origin(urlparse(origin.decode("latin1"))):
                return await WebsocketDenier()(scope, receive, send)
        return await self.inner(scope, receive, send)


class WebSocketAuthStack:
    """Routes a socket to token or cookie authentication by what it presents."""

    def __init__(self, inner: Any) -> None:
        self._token = _TokenAuth(inner)
        self._cookie = AllowedHostsOriginValidator(AuthMiddlewareStack(inner))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if token_from_scope(scope) is not None:
            return await self._token(scope, receive, send)
        return await self._cookie(scope, receive, send)
