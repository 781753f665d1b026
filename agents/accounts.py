"""Credentials that stop working: API tokens expire, and a user's access is revoked when their
password changes, their account is deactivated or deleted.

- A token is valid for ``NETACLAW["TOKEN_TTL_SECONDS"]`` after it was issued (0: forever);
  the REST API (``web.api_auth``) and the WebSocket (the socket layer's auth) both ask
  ``valid_token``. ``token_issue`` replaces an expired token with a new one.
- A password change deletes the user's tokens (the next login issues a new one); Django's
  session hash already ends their other browser sessions.
- A password change, a deactivation or a deletion closes the user's open sockets: each socket
  joins ``user_group`` and gets ``{"type": "user.revoked"}``, whichever process serves it.

The receivers are connected by ``agents.apps`` (``connect_receivers``).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.signals import post_delete, post_save, pre_save
from django.utils import timezone
from rest_framework.authtoken.models import Token

logger = logging.getLogger(__name__)

USER_REVOKED = "user.revoked"  # the channel-layer message type a socket closes on
_REVOKE = "_netaclaw_revoke"  # pre_save → post_save: why the user's access ends


class TokenExpired(Exception):
    """The token exists but is older than ``TOKEN_TTL_SECONDS``."""


def token_ttl() -> timedelta | None:
    seconds = int(settings.NETACLAW.get("TOKEN_TTL_SECONDS", 0) or 0)
    return timedelta(seconds=seconds) if seconds > 0 else None


def token_expired(token: Token) -> bool:
    ttl = token_ttl()
    return ttl is not None and token.created + ttl <= timezone.now()


def valid_token(key: str) -> Token | None:
    """The token of this key (its user loaded) if its user is active, else None; raises
    TokenExpired for an old one."""
    token = Token.objects.select_related("user").filter(key=key).first()
    if token is None or not token.user.is_active:
        return None
    if token_expired(token):
        raise TokenExpired(key[:4])
    return token


def token_issue(*, user: Any) -> Token:
    """The user's token; an expired one is replaced by a new key."""
    token, created = Token.objects.get_or_create(user=user)
    if not created and token_expired(token):
        token.delete()
        token = Token.objects.create(user=user)
    return token


def user_group(user_id: Any) -> str:
    """The channel-layer group every socket of this user joins."""
    return f"user.{int(user_id)}"


def revoke_sockets(user_id: Any) -> None:
    """Close every socket of this user, in every process (after the transaction commits)."""

    def send() -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            async_to_sync(layer.group_send)(user_group(user_id), {"type": USER_REVOKED})
        except Exception:  # a dead Redis must not fail the account change itself
            logger.exception("could not close the sockets of user %s", user_id)

    transaction.on_commit(send)


def _note_revocation(sender: Any, instance: Any, update_fields: Any = None, **kwargs: Any) -> None:
    """Before a user is saved: does this save change the password or deactivate them?"""
    if instance.pk is None:
        return
    if update_fields is not None and not {"password", "is_active"} & set(update_fields):
        return  # e.g. a login's last_login: no query
    before = sender._default_manager.filter(pk=instance.pk).values("password", "is_active")
    stored = before.first()
    if stored is None:
        return
    password_changed = stored["password"] != instance.password
    deactivated = stored["is_active"] and not instance.is_active
    if password_changed or deactivated:
        setattr(instance, _REVOKE, "password" if password_changed else "deactivated")


def _revoke_after_save(sender: Any, instance: Any, created: bool = False, **kwargs: Any) -> None:
    why = instance.__dict__.pop(_REVOKE, None)
    if why is None:
        return
    if why == "password":
        Token.objects.filter(user=instance).delete()
    revoke_sockets(instance.pk)


def _revoke_after_delete(sender: Any, instance: Any, **kwargs: Any) -> None:
    revoke_sockets(instance.pk)  # its tokens went with it (cascade)


def connect_receivers() -> None:
    user_model = get_user_model()
    uid = "netaclaw.accounts"
    pre_save.connect(_note_revocation, sender=user_model, dispatch_uid=f"{uid}.pre_save")
    post_save.connect(_revoke_after_save, sender=user_model, dispatch_uid=f"{uid}.post_save")
    post_delete.connect(_revoke_after_delete, sender=user_model, dispatch_uid=f"{uid}.post_delete")
