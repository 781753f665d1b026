"""The security settings read from the environment (issue 27 items 7 and 8), each in a fresh
process on ``netaclaw.settings``: the lockout's key, the trusted proxies and what they make
count, and a clear refusal of a value that is not one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOW = (
    "import json; from django.conf import settings; print(json.dumps({"
    "'lockout': settings.AXES_LOCKOUT_PARAMETERS, 'proxies': settings.TRUSTED_PROXIES, "
    "'ssl_header': getattr(settings, 'SECURE_PROXY_SSL_HEADER', None), "
    "'first': settings.MIDDLEWARE[0]}))"
)


def _settings(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "NETACLAW_"))}
    base.pop("DATABASE_URL", None)
    code = "import django; django.setup(); " + SHOW
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            **base,
            "DJANGO_SETTINGS_MODULE": "netaclaw.settings",
            "NETACLAW_VAR_DIR": str(tmp_path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_defaults(tmp_path) -> None:
    shown = json.loads(_settings({}, tmp_path).stdout.strip().splitlines()[-1])
    assert shown == {
        "lockout": [["username", "ip_address"]],  # account and address together
        "proxies": [],
        "ssl_header": None,  # no proxy is trusted: X-Forwarded-Proto counts from none
        "first": "netaclaw.proxies.trusted_proxy_middleware",
    }


def test_trusted_proxies_and_the_stricter_lockout(tmp_path) -> None:
    env = {
        "NETACLAW_TRUSTED_PROXIES": "10.0.0.5, 192.168.0.0/16,2001:db8::/32",
        "NETACLAW_LOGIN_LOCKOUT": "account_or_address",
    }
    shown = json.loads(_settings(env, tmp_path).stdout.strip().splitlines()[-1])
    assert shown["proxies"] == ["10.0.0.5/32", "192.168.0.0/16", "2001:db8::/32"]
    assert shown["ssl_header"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert shown["lockout"] == ["username", "ip_address"]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"NETACLAW_TRUSTED_PROXIES": "10.0.0.5, proxy.internal"}, "'proxy.internal'"),
        ({"NETACLAW_LOGIN_LOCKOUT": "account"}, "NETACLAW_LOGIN_LOCKOUT must be one of"),
    ],
)
def test_a_bad_value_is_refused_with_its_name(tmp_path, env, message) -> None:
    result = _settings(env, tmp_path)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr
