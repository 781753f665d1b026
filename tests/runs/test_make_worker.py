"""`make worker` where there is nothing to run (issue 24 item 2; CONTRACT §8): with SQLite
jobs run inside `make run`, and the command says so and exits 0."""

from __future__ import annotations

import subprocess
import sys

from tests.support.daphne import ROOT


def test_make_worker_with_sqlite_says_jobs_run_inside_make_run() -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "run_worker"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "netaclaw.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Jobs run inside `make run`" in done.stdout
