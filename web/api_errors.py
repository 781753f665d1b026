"""How the REST API answers what goes wrong before or beside a view's own checks: always JSON.

DRF's handler leaves Django's own exceptions to Django, which answers with an HTML page: a
body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (``RequestDataTooBig``: a 400 page) and a domain
write's ``ValidationError`` (a 500). Here they become JSON like every other API error — 413
``{"detail", "reason": "request_too_large"}`` and 400 with the fields' messages — and JSON
nested deeper than Python can decode is DRF's 400 parse error instead of a 500.
Whatever else goes wrong under ``/api/`` is made JSON by ``web.api_json_errors``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, serializers, status
from rest_framework import views as drf_views  # a module: DRF's settings import this one
from rest_framework.parsers import JSONParser
from rest_framework.response import Response

from agents import reasons

# DRF's exception handler: the exception and DRF's context (view, args, kwargs, request)
ExceptionHandler = Callable[[Exception, dict[str, Any]], Response | None]


class ReasonedError(exceptions.APIException):
    """An API error whose body carries a ``reason`` code of ``agents.reasons`` too."""

    reason = "internal_error"


class RequestTooLarge(ReasonedError):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = reason = "request_too_large"

    def __init__(self) -> None:
        super().__init__(reasons.message(self.reason))


class JSONBodyParser(JSONParser):
    """DRF's JSON parser; JSON nested too deeply for Python is a parse error (400), not a 500."""

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - nested too deeply") from None


def as_api_exception(exc: Exception) -> Exception:
    """Django's own exceptions that DRF leaves to Django, as DRF's (the others unchanged)."""
    if isinstance(exc, RequestDataTooBig):
        return RequestTooLarge()
    if isinstance(exc, DjangoValidationError):
        return exceptions.ValidationError(serializers.as_serializer_error(exc))
    return exc


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """``REST_FRAMEWORK["EXCEPTION_HANDLER"]``: DRF's handler, after ``as_api_exception``."""
    exc = as_api_exception(exc)
    response = drf_views.exception_handler(exc, context)
    if response is not None and isinstance(exc, ReasonedError) and isinstance(response.data, dict):
        response.data["reason"] = exc.reason
    return response


def refusal_response(reason: str, detail: str = "", **extra: Any) -> Response:
    """``{"error", "reason", …extra}`` in the request's language, with the status the reason
    has in the one reason table; ``detail`` (a limit, a file name) after the message."""
    text = reasons.message(reason) + (f" ({detail})" if detail else "")
    body = {"error": text, "reason": reason, **extra}
    return Response(body, status=reasons.http_status(reason))
