"""Template context of every page."""

from __future__ import annotations

from django.http import HttpRequest


def csp_nonce(request: HttpRequest) -> dict[str, object]:
    """``csp_nonce``: this response's Content-Security-Policy nonce (django-csp), under the name
    django-htmx's ``{% htmx_script %}`` reads; it is made (and sent in the header) only when a
    template uses it."""
    return {"csp_nonce": getattr(request, "csp_nonce", None)}
