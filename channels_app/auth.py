"""Who may open a WebSocket (CONTRACT §5).

Browsers authenticate with the Django session cookie and must send an allowed
``Origin`` (cross-site WebSocket hijacking is the socket's CSRF). Programs send
``Authorization: Token <key>`` and may send no Origin at all — a browser page
cannot set that header, so a token is never ambient. A token with a foreign
Origin is still refused; an expired one (``agents.accounts``) is told so and closed with
4401.

An allowed Origin is the page's own — the same host *and port* as the socket's ``Host``, on
a host of ``ALLOWED_HOSTS`` — or one of ``CSRF_TRUSTED_ORIGINS``: another local server (any
other port of localhost) is a foreign site. Without a ``Host`` header (not a browser), an
allowed host on its scheme's default port.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlparse

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http.request import split_domain_port, validate_host
from django.utils import translation

from agents import accounts, reasons
from agents.events import ErrorEvent
from channels_app.socket_watch import socket_watch

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


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
    """The token's user; AnonymousUser for an unknown key or an inactive user; None for an
    expired token."""
    try:
        token = accounts.valid_token(key)
    except accounts.TokenExpired:
        return None
    return token.user if token is not None else AnonymousUser()


def _host_port(netloc: str, scheme: str) -> tuple[str, int] | None:
    host, port = split_domain_port(netloc.lower())
    if not host:
        return None
    try:
        return host, int(port) if port else _DEFAULT_PORTS[scheme]
    except (ValueError, KeyError):
        return None


def _trusted(origin: str) -> bool:
    """``origin`` is one of CSRF_TRUSTED_ORIGINS (``https://*.example.com`` for subdomains)."""
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        trusted = trusted.lower().rstrip("/")
        scheme, _, netloc = trusted.partition("://")
        if "*" in netloc:
            if origin.startswith(f"{scheme}://") and validate_host(
                origin.partition("://")[2], [netloc.replace("*", "", 1)]
            ):
                return True
        elif origin == trusted:
            return True
    return False


def origin_allowed(scope: dict[str, Any], raw_origin: bytes) -> bool:
    """The page's own origin (the socket's Host, port included, on an allowed host) or a
    trusted one; see the module's docstring."""
    origin = raw_origin.decode("latin1").strip().lower().rstrip("/")
    parsed = urlparse(origin)
    if parsed.scheme not in ("http", "https") or parsed.path or parsed.query:
        return False
    if _trusted(origin):
        return True
    page = _host_port(parsed.netloc, parsed.scheme)
    if page is None or not validate_host(page[0], settings.ALLOWED_HOSTS):
        return False
    host = _header(scope, b"host")
    if host is None:
        return page[1] == _DEFAULT_PORTS[parsed.scheme]
    return page == _host_port(host.decode("latin1"), str(scope.get("scheme") or "ws"))


class _OriginCheck:
    """Refuses a socket whose Origin is not allowed (``required``: also one without any)."""

    def __init__(self, inner: Any, *, required: bool) -> None:
        self.inner = inner
        self.required = required

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        origin = _header(scope, b"origin")
        if (origin is None and self.required) or (
            origin is not None and not origin_allowed(scope, origin)
        ):
            return await WebsocketDenier()(scope, receive, send)
        return await self.inner(scope, receive, send)


class _TokenAuth:
    """Authenticates a socket by its Authorization header."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        key = token_from_scope(scope) or ""
        user = await _user_for_token(key) if key else AnonymousUser()
        if user is None:
            return await _refuse_expired_token(receive, send)
        return await self.inner(dict(scope, user=user), receive, send)


async def _refuse_expired_token(receive: Any, send: Any) -> None:
    """An expired token's socket is accepted only to say so: ``error`` / ``token_expired``,
    then a close with 4401, so a program knows to request a new token. (A handshake refused
    before the accept reaches the client as a bare HTTP 403, whatever code the server
    meant.)"""
    message = await receive()
    if message.get("type") != "websocket.connect":
        return
    with translation.override("en"):
        text = reasons.message("token_expired")
    await send({"type": "websocket.accept"})
    error = ErrorEvent(text, "token_expired").to_json()
    await send({"type": "websocket.send", "text": json.dumps(error)})
    await send({"type": "websocket.close", "code": CLOSE_REVOKED})


class WebSocketAuthStack:
    """Routes a socket to token or cookie authentication by what it presents; a browser's
    (cookie) socket must send an allowed Origin, a program's (token) may send none."""

    def __init__(self, inner: Any) -> None:
        self._token = _OriginCheck(_TokenAuth(inner), required=False)
        self._cookie = _OriginCheck(AuthMiddlewareStack(inner), required=True)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if token_from_scope(scope) is not None:
            return await self._token(scope, receive, send)
        return await self._cookie(scope, receive, send)


CLOSE_REVOKED = 4401  # the same code as a socket refused for want of a user


class RevocableSocket:
    """Mixin of a consumer: its socket joins its user's group and is closed when the user's
    access ends (password changed, deactivated, deleted: ``agents.accounts``) or its token
    expires — at once through the group when signals tell, else at the next check of
    ``channels_app.socket_watch``."""

    channel_layer: Any
    close: Any  # the consumer's
    channel_name: str
    scope: dict[str, Any]
    user_group_name: str | None = None

    async def join_user_group(self, user: Any) -> None:
        self.user_group_name = accounts.user_group(user.pk)
        await self.channel_layer.group_add(self.user_group_name, self.channel_name)
        credential = accounts.credential_of(user, token_from_scope(self.scope))
        socket_watch().add(self.channel_name, credential, self.channel_layer)

    async def leave_user_group(self) -> None:
        if self.user_group_name is not None:
            socket_watch().discard(self.channel_name)
            await self.channel_layer.group_discard(self.user_group_name, self.channel_name)
            self.user_group_name = None

    async def user_revoked(self, message: dict[str, Any]) -> None:
        """Channel-layer handler of ``accounts.USER_REVOKED``."""
        await self.close(code=CLOSE_REVOKED)
