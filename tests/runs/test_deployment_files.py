"""The deployment files README points to are valid and say what the runners need:
N web processes + M workers + PostgreSQL + Redis, and stop times a worker's drain fits in."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from runs import worker

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
WORKER_STOP_SECONDS = worker.SHUTDOWN_GRACE_SECONDS + worker.INTERRUPT_GRACE_SECONDS


def _seconds(value: str) -> float:
    match = re.fullmatch(r"(\d+)s", str(value))
    assert match, value
    return float(match.group(1))


def test_the_compose_file_runs_web_workers_postgres_and_redis() -> None:
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "migrate", "web", "worker"} <= services.keys()
    assert services["worker"]["command"] == ["python", "manage.py", "run_worker"]
    for role in ("web", "worker", "migrate"):
        env = services[role]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and env["REDIS_URL"]
        assert env["DJANGO_DEBUG"] == "0"
        assert (DEPLOY.parent / services[role]["build"]["dockerfile"]).exists()
    # the worker's drain must fit in the stop grace period, or it is killed mid-drain
    assert _seconds(services["worker"]["stop_grace_period"]) > WORKER_STOP_SECONDS
    assert services["worker"]["stop_signal"] == "SIGTERM"
    assert "/readyz" in " ".join(services["web"]["healthcheck"]["test"])
    assert services["web"]["environment"]["NETACLAW_TRUSTED_PROXIES"]


@pytest.mark.parametrize("unit", ["netaclaw-web@.service", "netaclaw-worker@.service"])
def test_the_systemd_units_are_valid(unit: str, tmp_path) -> None:
    text = (DEPLOY / "systemd" / unit).read_text()
    assert "KillSignal=SIGTERM" in text
    assert "--proxy-headers" not in text  # netaclaw.serve refuses it (issue 27 item 8)
    stop = float(re.search(r"TimeoutStopSec=(\d+)", text).group(1))
    if "worker" in unit:
        assert stop > WORKER_STOP_SECONDS and "run_worker" in text
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    # verify it as installed here: the checkout for /opt/netaclaw, this machine's user
    local = text.replace("/opt/netaclaw", str(ROOT)).replace("User=netaclaw", "User=root")
    env = tmp_path / "env"
    env.write_text("DATABASE_URL=postgres://x\n")
    local = local.replace("/etc/netaclaw/env", str(env))
    path = tmp_path / unit.replace("@.", "@1.")
    path.write_text(local)
    done = subprocess.run(
        ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, timeout=60
    )
    problems = [
        line for line in (done.stdout + done.stderr).splitlines() if unit.split("@")[0] in line
    ]
    assert problems == [], problems
