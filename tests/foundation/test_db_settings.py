"""PostgreSQL connections prepare repeated statements unless told not to (settings)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = (
    "import json; from netaclaw import settings; "
    "print(json.dumps(settings.DATABASES['default'].get('OPTIONS', {})))"
)


def _options(**env: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_postgres_prepares_repeated_statements_by_default() -> None:
    options = _options(DATABASE_URL="postgres://u@db.invalid:5432/x")
    assert options == {"server_side_binding": True, "prepare_threshold": 2}


@pytest.mark.parametrize("url", ["postgres://u@db.invalid:5432/x", "sqlite:////tmp/x.sqlite3"])
def test_prepared_statements_can_be_turned_off_and_never_apply_to_sqlite(url: str) -> None:
    options = _options(DATABASE_URL=url, NETACLAW_DB_PREPARED_STATEMENTS="0")
    assert "server_side_binding" not in options and "prepare_threshold" not in options
