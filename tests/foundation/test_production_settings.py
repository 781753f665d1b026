"""The production settings (issue 15, item 6): no start without a secret key, HTTPS and a
Content-Security-Policy under ``DJANGO_DEBUG=0``, and ``check --deploy`` clean with the
environment the README gives. Each runs ``netaclaw.settings`` in a fresh process."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# README, "Running in production": the variables it tells to set.
PRODUCTION = {
    "DATABASE_URL": "postgres://netaclaw:secret@db.internal:5432/netaclaw",
    "REDIS_URL": "redis://redis.internal:6379/0",
    "DJANGO_DEBUG": "0",
    "DJANGO_ALLOWED_HOSTS": "chat.example.com",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://chat.example.com",
}


def _run(code: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "NETACLAW_"))}
    base.pop("DATABASE_URL", None)
    base.pop("REDIS_URL", None)
    full = {
        **base,
        "DJANGO_SETTINGS_MODULE": "netaclaw.settings",
        "NETACLAW_VAR_DIR": str(tmp_path),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "code",
    ["import django; django.setup()", "import netaclaw.asgi"],  # a command; Daphne directly
    ids=["setup", "asgi"],
)
def test_debug_off_without_a_secret_key_refuses_to_start(tmp_path, code) -> None:
    proc = _run(code, {"DJANGO_DEBUG": "0"}, tmp_path)
    assert proc.returncode != 0
    assert "ImproperlyConfigured: DJANGO_DEBUG=0 needs DJANGO_SECRET_KEY" in proc.stderr
    assert not (tmp_path / "secret_key").exists(), "no development key is made either"


def test_debug_on_without_a_key_uses_the_generated_development_key(tmp_path) -> None:
    proc = _run(
        "import django; django.setup(); from django.conf import settings; "
        "print(len(settings.SECRET_KEY) > 40)",
        {"DJANGO_DEBUG": "1"},
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True" and (tmp_path / "secret_key").exists()


def test_check_deploy_is_clean_with_the_readmes_production_settings(tmp_path) -> None:
    env = {**PRODUCTION, "DJANGO_SECRET_KEY": secrets.token_urlsafe(50)}
    proc = _run(
        "import sys; from django.core.management import execute_from_command_line; "
        "execute_from_command_line(['manage.py', 'check', '--deploy', '--fail-level', 'WARNING'])",
        env,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "System check identified no issues (0 silenced)." in proc.stdout


_HEADERS = """
import django
django.setup()
from django.test import Client
client = Client(HTTP_HOST="chat.example.com")
plain = client.get("/accounts/login/")
print("redirect", plain.status_code, plain.get("Location"))
page = client.get("/accounts/login/", secure=True)
print("status", page.status_code)
for name in ("Strict-Transport-Security", "Content-Security-Policy"):
    print(name, "=", page.get(name, ""))
print("html-nonce", 'nonce="' in page.content.decode())
"""


def test_debug_off_sends_hsts_and_a_content_security_policy(tmp_path) -> None:
    env = {
        **PRODUCTION,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'unused.sqlite3'}",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
    }
    proc = _run(_HEADERS, env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.strip().splitlines())
    assert lines["redirect"] == "301 https://chat.example.com/accounts/login/"
    assert lines["status"] == "200"
    assert lines["Strict-Transport-Security"] == "= max-age=31536000; includeSubDomains; preload"
    policy = lines["Content-Security-Policy"].removeprefix("= ")
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'self'"
    assert directives["script-src"].startswith("'self' 'nonce-")
    assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'"
    assert "unsafe-inline" not in directives["script-src"] + directives["style-src"]
    assert "unsafe-eval" not in policy
    assert lines["html-nonce"] == "True"
