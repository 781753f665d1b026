"""Settings of the test suite: production's (``netaclaw.settings``), minus what only slows tests.

Everything else — database, channel layer, middleware, security, i18n — stays as in
production, so the tests keep exercising it. Tests of the production settings themselves
(``tests/foundation/test_db_settings.py``, ``test_startup_heap.py``, ``make run``) load
``netaclaw.settings`` on purpose.

The live servers the tests start (``tests/e2e``, the Daphne processes of
``tests/gateway`` and ``tests/reliability``) run on this module too: users they log in
are created here, with this hasher.
"""

from __future__ import annotations

import os

from netaclaw.settings import *  # noqa: F403

# PBKDF2 (Django's default) costs about half a second per password set or checked, by
# design; the suite creates hundreds of users. MD5 is insecure and fit only for tests.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Background compaction (``compaction.background``) prepares summaries in a worker thread
# whenever a chat passes its soft threshold; left on, it would take scripted replies that a
# test queued for its own requests. Off here unless the environment turns it on (a live
# server started for that); its tests turn it on with the ``settings`` fixture.
NETACLAW = {
    **NETACLAW,  # noqa: F405
    "BACKGROUND_COMPACTION": os.environ.get("NETACLAW_BACKGROUND_COMPACTION", "0") != "0",
    # Jobs run in the test process unless a test starts worker processes and says so (the
    # suite's worker tests, ``tests/runs``; the live servers they start get the variable).
    "RUNNER": os.environ.get("NETACLAW_RUNNER", "inprocess"),
}
