"""Every error under ``/api/`` in JSON, whatever produced it (issue 27 item 10).

An exception no handler expected (a server's model list of ``[]`` crashed Test connection),
an unknown address, a refusal by a middleware: Django answers with its HTML page (the
technical one with ``DEBUG`` on). ``api_json_errors``, a middleware near the top of the
stack, turns such a page for an ``/api/`` address into JSON: ``{"detail"}``, and for a 5xx
``{"detail", "reason": "server_error"}`` — never an exception's name. DRF's own responses
are left alone (their browsable HTML pages included); Django has logged the error already.
A module of its own: ``web.api_errors`` is imported by DRF's settings, which the middleware
would import before them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import sync_and_async_middleware
from rest_framework import exceptions
from rest_framework.response import Response

from agents import reasons

API_PREFIX = "/api/"

# what DRF itself says for these statuses (translated like its own answers)
_DETAILS: dict[int, Callable[[], str]] = {
    400: lambda: str(exceptions.ParseError.default_detail),
    401: lambda: str(exceptions.NotAuthenticated.default_detail),
    403: lambda: str(exceptions.PermissionDenied.default_detail),
    404: lambda: str(exceptions.NotFound.default_detail),
    405: lambda: str(exceptions.MethodNotAllowed.default_detail).replace(' "{method}"', ""),
}


def json_error_body(status_code: int) -> dict[str, Any]:
    """The JSON an API error of this status answers with, when no view said more."""
    if status_code >= 500:
        return {"detail": reasons.message("server_error"), "reason": "server_error"}
    detail = _DETAILS.get(status_code)
    if detail is not None:
        return {"detail": detail()}
    try:
        return {"detail": HTTPStatus(status_code).phrase}
    except ValueError:
        return {"detail": "Error"}


def as_json_error(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """``response`` unless it is one of Django's HTML error pages for an API address."""
    if (
        response.status_code < 400
        or not request.path.startswith(API_PREFIX)
        or isinstance(response, Response)  # DRF's: JSON, or the browsable API's page
        or response.get("Content-Type", "").startswith("application/json")
    ):
        return response
    answer = JsonResponse(json_error_body(response.status_code), status=response.status_code)
    for header in ("Retry-After", "Allow", "WWW-Authenticate"):
        if response.has_header(header):
            answer[header] = response[header]
    return answer


Handler = Callable[[HttpRequest], HttpResponse] | Callable[[HttpRequest], Awaitable[HttpResponse]]


@sync_and_async_middleware
def api_json_errors(get_response: Handler) -> Handler:
    """Near the top of ``MIDDLEWARE``: every error under ``/api/`` in JSON (``as_json_error``),
    with ``DEBUG`` on or off."""
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponse:
            return as_json_error(request, await get_response(request))

        markcoroutinefunction(async_middleware)
        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponse:
        return as_json_error(request, get_response(request))  # type: ignore[arg-type]

    return middleware
