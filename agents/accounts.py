"""Credentials that stop working: API tokens expire, and a user's access is revoked when their
password changes, their account is deactivated or deleted.

- A token is valid for ``NETACLAW["TOKEN_TTL_SECONDS"]`` after it was issued (0: forever);
  the REST API (``web.api_auth``) and the WebSocket (the socket layer's auth) both ask
  ``valid_token``. ``token_issue`` replaces an expired token with a new one.
- A password change deletes the user's tokens (the next login issues a new one); Django's
  session hash already ends their other browser sessions.
- A password change, a deactivation or a deletion closes the user's open sockets: each socket
  joins ``user_group`` and gets ``{"type": "user.revoked"}``, whichever process serves it.
- Signals miss some of these changes (a queryset ``update()``, raw SQL, a command in another
  process whose channel layer cannot reach the server's) and a token expires without any
  write at all: every process also checks its open sockets' credentials again every
  ``NETACLAW["SOCKET_RECHECK_SECONDS"]`` (``revoked_credentials``, one query per kind for
  all of a process's sockets, run by the socket layer).

The receivers are connected by ``agents.apps`` (``connect_receivers``).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.signals import post_delete, post_save, pre_save
from django.utils import timezone
from rest_framework.authtoken.models import Token

from agents.id_batches import id_batches

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


@dataclass(frozen=True, slots=True)
class Credential:
    """What an open socket was let in on: its user as they were then (the password hash
    changes with the password) and, for a program's socket, its token."""

    user_id: int
    password: str
    token_key: str | None = None


def credential_of(user: Any, token_key: str | None = None) -> Credential:
    return Credential(int(user.pk), str(user.password), token_key or None)


def revoked_credentials(credentials: Collection[Credential]) -> set[Credential]:
    """The credentials that no longer hold: the user deleted, deactivated or given another
    password; the token deleted or expired."""
    user_ids = sorted({c.user_id for c in credentials})
    keys = sorted({c.token_key for c in credentials if c.token_key})
    users: dict[int, tuple[str, bool]] = {}
    for batch in id_batches(user_ids):
        rows = get_user_model()._default_manager.filter(pk__in=batch)
        users.update(
            (pk, (pw, active)) for pk, pw, active in rows.values_list("pk", "password", "is_active")
        )
    created: dict[str, datetime] = {}
    for key_batch in id_batches(keys):
        created.update(Token.objects.filter(key__in=key_batch).values_list("key", "created"))
    ttl = token_ttl()
    now = timezone.now()

    def holds(credential: Credential) -> bool:
        password, active = users.get(credential.user_id, ("", False))
        if not active or password != credential.password:
            return False
        if credential.token_key is None:
            return True
        issued = created.get(credential.token_key)
        return issued is not None and (ttl is None or issued + ttl > now)

    return {c for c in credentials if not holds(c)}


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
