"""The suite's settings are production's but for what only slows tests (tests/settings.py)."""

from __future__ import annotations

import os

from netaclaw import settings as production
from tests import settings as for_tests

# What tests/settings.py may set differently, each with its reason there.
OVERRIDDEN = {"PASSWORD_HASHERS", "NETACLAW"}
# NETACLAW: background compaction, which would race scripted replies, and the runner: jobs
# run in the test process unless a test starts worker processes (tests/runs)
NETACLAW_OVERRIDDEN = {"BACKGROUND_COMPACTION", "RUNNER"}


def _settings(module: object) -> dict[str, object]:
    return {name: getattr(module, name) for name in dir(module) if name.isupper()}


def test_the_test_settings_change_only_what_slows_tests() -> None:
    ours, theirs = _settings(for_tests), _settings(production)
    assert theirs.keys() <= ours.keys()
    changed = {name for name in ours if name not in theirs or ours[name] != theirs[name]}
    assert changed <= OVERRIDDEN
    knobs = for_tests.NETACLAW
    assert knobs.keys() == production.NETACLAW.keys()
    assert {k for k in knobs if knobs[k] != production.NETACLAW[k]} <= NETACLAW_OVERRIDDEN


def test_the_suite_and_the_servers_it_starts_run_on_them(settings) -> None:
    assert os.environ["DJANGO_SETTINGS_MODULE"] == "tests.settings"  # what subprocesses get
    assert settings.PASSWORD_HASHERS == ["django.contrib.auth.hashers.MD5PasswordHasher"]
