"""Accounts: log out (Django 5 logs out on POST only — a GET that logs out is a CSRF hole; a
GET of the logout address gets a page with the button, not a 405), login throttling and
unlocking."""

from __future__ import annotations

import math
from typing import Any, TypedDict

from axes.backends import AxesStandaloneBackend
from axes.utils import reset as axes_reset
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LogoutView
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import translation
from django.utils.translation import ngettext

from agents import reasons


class LogoutWithConfirmation(LogoutView):
    http_method_names = ["get", "post", "options"]

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return render(request, "registration/logout_confirm.html")


# --- login throttling (django-axes, configured in settings: AXES_*) ----------------------


class LoginThrottleBackend(AxesStandaloneBackend):
    """Axes' lockout check for logins over HTTP (the login page, ``POST /api/auth/token/``,
    the admin's). ``authenticate()`` without a request (a management command, a test's
    ``client.login``) has no address to throttle and is left to the next backend."""

    def authenticate(self, request: Any, *args: Any, **kwargs: Any) -> None:
        if request is None:
            return None
        return super().authenticate(request, *args, **kwargs)


def login_unlock(*, username: str | None = None, address: str | None = None) -> int:
    """Lift the lockouts of an account (from every address), of an address (for every
    account) or of the one pair; the number of attempt records cleared. The admin's Unlock
    actions; ``manage.py axes_reset_username`` / ``axes_reset_ip`` /
    ``axes_reset_ip_username`` / ``axes_reset`` do the same from the shell."""
    if not username and not address:
        raise ValueError("name an account or an address to unlock")
    return int(axes_reset(ip=address or None, username=username or None))


def lockout_minutes() -> int:
    return max(1, math.ceil(settings.AXES_COOLOFF_TIME.total_seconds() / 60))


def lockout_message() -> str:
    minutes = lockout_minutes()
    retry = ngettext(
        "Try again in %(minutes)s minute.", "Try again in %(minutes)s minutes.", minutes
    ) % {"minutes": minutes}
    return f"{reasons.message('login_locked')} {retry}"


def lockout_response(
    request: HttpRequest, original_response: Any = None, credentials: Any = None
) -> HttpResponse:
    """``AXES_LOCKOUT_CALLABLE``: a locked-out login gets 429 — JSON for the API, else the
    login page with the reason (and never a hint whether the password was right)."""
    # axes' async path calls this in another thread than the view's: the request's language
    # (LocaleMiddleware's) is set again here
    with translation.override(getattr(request, "LANGUAGE_CODE", None) or settings.LANGUAGE_CODE):
        return _lockout_response(request)


class LockoutBody(TypedDict):
    """The API's answer to a locked-out login (429)."""

    detail: str
    reason: str
    retry_after: int


def lockout_body() -> LockoutBody:
    """The API's answer to a locked-out login (429)."""
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    return {"detail": lockout_message(), "reason": "login_locked", "retry_after": seconds}


def _lockout_response(request: HttpRequest) -> HttpResponse:
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(lockout_body(), status=429)
    else:
        context = {"form": AuthenticationForm(request), "lockout": lockout_message()}
        response = render(request, "registration/login.html", context, status=429)
    response["Retry-After"] = str(seconds)
    return response
