"""Token authentication of the REST API with the tokens' expiry (``agents.accounts``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from agents import accounts, reasons
from web.api_errors import ReasonedError

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser
    from rest_framework.authtoken.models import Token


class TokenExpired(exceptions.AuthenticationFailed, ReasonedError):
    """401 ``{"detail", "reason": "token_expired"}``: log in again for a new token."""

    default_code = reason = "token_expired"

    def __init__(self) -> None:
        super().__init__(reasons.message(self.reason))


class ExpiringTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``, refused once the token is older than
    ``NETACLAW_TOKEN_TTL_SECONDS`` (a password change deletes the user's tokens)."""

    def authenticate_credentials(self, key: str) -> tuple[AbstractBaseUser, Token]:
        try:
            token = accounts.valid_token(key)
        except accounts.TokenExpired:
            raise TokenExpired() from None
        if token is None:
            return super().authenticate_credentials(key)  # DRF's own refusals and messages
        return token.user, token
