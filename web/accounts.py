"""Log out: Django 5 logs out on POST only (a GET that logs out is a CSRF hole); a GET of
the logout address (a bookmark, a typed URL) gets a page with the button, not a 405."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.views import LogoutView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


class LogoutWithConfirmation(LogoutView):
    http_method_names = ["get", "post", "options"]

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return render(request, "registration/logout_confirm.html")
