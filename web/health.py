"""``/healthz`` and ``/readyz`` (issue 24 item 6; CONTRACT §8): for load balancers and
orchestrators, so no login, and nothing secret in the answers."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from runs.health import readiness


@login_not_required
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 while the process serves (it answered)."""
    return JsonResponse({"status": "ok"})


@login_not_required
@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when the database, Redis and (with workers) a worker seen in the last 30 s
    answer; else 503 naming what is missing."""
    checks = readiness()
    missing = sorted(part for part, state in checks.items() if state != "ok")
    body = {"status": "not_ready" if missing else "ready", "missing": missing, "checks": checks}
    return JsonResponse(body, status=503 if missing else 200)
