"""REST API clients: anonymous, authenticated in-process, or by token; English messages."""

from __future__ import annotations

from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

ENGLISH = {"HTTP_ACCEPT_LANGUAGE": "en"}  # LANGUAGE_CODE is zh-hans; assert English messages


def client_for(user=None) -> APIClient:
    client = APIClient(**ENGLISH)
    if user is not None:
        client.force_authenticate(user=user)
    return client


def token_client(user) -> APIClient:
    token, _ = Token.objects.get_or_create(user=user)
    return APIClient(HTTP_AUTHORIZATION=f"Token {token.key}", **ENGLISH)
