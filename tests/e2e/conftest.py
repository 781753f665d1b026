"""Browser tests: headless Debian Chromium against a real Daphne, a real database and the
scripted LLM server.

Run them as their own pytest process (sync Playwright and pytest-asyncio cannot share
one)::

    DJANGO_ALLOW_ASYNC_UNSAFE=true .venv/bin/pytest tests/e2e -p no:asyncio

How the pieces meet (chosen to be robust, not clever):

* pytest-django creates the test database as usual, but as a *file* (SQLite) or with an
  explicit name (PostgreSQL, ``DATABASE_URL``), so another process can open it.
* ``daphne netaclaw.asgi:application`` runs as a plain subprocess on a free port with
  ``DATABASE_URL`` pointing at that test database: the production entry point, static
  files through WhiteNoise, WebSockets through Channels, no fork tricks.
* The scripted LLM server runs in this process (a thread); model channels point at it,
  so the tests script the model and read back every request it received.
* Test data is written with the ORM here (committed at once, no test transaction), so
  the server sees it; browsers log in with a session cookie made by Django's test client.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

E2E_DIR = Path(__file__).resolve().parent
ROOT = E2E_DIR.parent.parent
SCREENSHOTS = E2E_DIR / "screenshots"
DOCS_SCREENSHOTS = ROOT / "docs" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Collected with pytest-asyncio active (``pytest tests``): leave the browser tests out."""
    if config.pluginmanager.hasplugin("asyncio") and collection_path.name.startswith("test_"):
        return True
    return None


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    _flush_through_deadlocks()


def _flush_through_deadlocks(tries: int = 5) -> None:
    """A test's flush (TRUNCATE of every table) while the live server still writes (a page's
    socket, a lease it renews) can deadlock on PostgreSQL, which then aborts one of the two:
    seen in CI as the flush failing a passed test. PostgreSQL resolves it by aborting the
    flush, so the flush is simply run again."""
    from django.core.management.base import CommandError
    from django.core.management.commands import flush
    from django.db import OperationalError

    handle = flush.Command.handle
    if getattr(handle, "retries_deadlocks", False):
        return

    def handle_retrying(self: Any, **options: Any) -> Any:
        for attempt in range(tries):
            try:
                return handle(self, **options)
            except CommandError as exc:
                cause = exc.__cause__
                deadlock = isinstance(cause, OperationalError) and "deadlock" in str(cause)
                if not deadlock or attempt == tries - 1:
                    raise
                time.sleep(0.2 * (attempt + 1))
        return None

    handle_retrying.retries_deadlocks = True  # type: ignore[attr-defined]
    flush.Command.handle = handle_retrying  # type: ignore[method-assign]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every browser test writes committed rows the server can read, flushed afterwards."""
    for item in items:
        if E2E_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.django_db(transaction=True))


_DAPHNE_LOG: list[Path] = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """A failed browser test shows the end of the server's log next to the traceback."""
    report = yield
    if report.failed and _DAPHNE_LOG and _DAPHNE_LOG[0].exists():
        tail = _DAPHNE_LOG[0].read_text(errors="replace")[-6000:]
        report.sections.append(("daphne log (tail)", tail))
    return report


# --- browser ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "headless": True,
        "args": CHROMIUM_ARGS,
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any], daphne_url: str) -> dict[str, Any]:
    return {
        **browser_context_args,
        "base_url": daphne_url,
        "locale": "zh-CN",
        "viewport": {"width": 1280, "height": 820},
    }


# --- database --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def django_db_modify_db_settings(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A test database another process can open: a file, or an explicit name."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    test = db.setdefault("TEST", {})
    if db["ENGINE"].endswith("sqlite3"):
        test["NAME"] = str(tmp_path_factory.mktemp("e2e-db") / "e2e.sqlite3")
    else:
        test["NAME"] = os.environ.get("NETACLAW_E2E_DB_NAME", "netaclaw_e2e_test")


def _database_url() -> str:
    from django.db import connection

    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    user = quote(s.get("USER") or "", safe="")
    password = quote(s.get("PASSWORD") or "", safe="")
    auth = f"{user}:{password}@" if user else ""
    host = s.get("HOST") or "localhost"
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"postgres://{auth}{host}{port}/{s['NAME']}"


# --- the scripted model ----------------------------------------------------------------


@pytest.fixture(scope="session")
def llm() -> Iterator[Any]:
    from tests.e2e.support import ScriptedModel

    with ScriptedModel() as model:
        yield model


@pytest.fixture(autouse=True)
def _fresh_model(request: pytest.FixtureRequest) -> None:
    if "llm" in request.fixturenames:
        request.getfixturevalue("llm").reset_script()


# --- the server ------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"daphne exited with {process.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"daphne did not answer {url} in time:\n{log.read_text()}")


@pytest.fixture(scope="session")
def daphne_url(
    django_db_setup: None,
    django_db_blocker: Any,
    tmp_path_factory: pytest.TempPathFactory,
    llm: Any,
) -> Iterator[str]:
    """``http://127.0.0.1:<port>`` of a Daphne serving the test database."""
    var_dir = tmp_path_factory.mktemp("e2e-var")
    log = var_dir / "daphne.log"
    _DAPHNE_LOG[:] = [log]
    port = _free_port()
    from django.conf import settings

    with django_db_blocker.unblock():
        database_url = _database_url()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        # this process's settings (tests.settings, set by pytest-django): passwords set
        # here are checked there
        "DJANGO_SETTINGS_MODULE": os.environ["DJANGO_SETTINGS_MODULE"],
        # the same key as this process, so session cookies made here are valid there
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
        "NETACLAW_VAR_DIR": str(var_dir),
        "DJANGO_DEBUG": "1",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "NETACLAW_CHANNEL_PREFIX": "netaclaw-e2e",
        "NETACLAW_AUXILIARY_TIMEOUT": "20",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    env.pop("NETACLAW_TEST_DB_NAME", None)
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                "netaclaw.asgi:application",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(f"{url}/accounts/login/", process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        if os.environ.get("NETACLAW_E2E_SHOW_LOG"):
            sys.stderr.write(log.read_text())


@pytest.fixture
def server_log(daphne_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return next(tmp_path_factory.getbasetemp().glob("e2e-var*/daphne.log"))


# --- data and logged-in pages ----------------------------------------------------------


@pytest.fixture
def data(transactional_db: None, daphne_url: str, llm: Any) -> Any:
    """Builders for users, channels, agents and sessions (see tests/e2e/support.py)."""
    from django.conf import settings
    from django.db import connection

    from tests.e2e.support import Data

    test_name = settings.DATABASES["default"]["TEST"]["NAME"]
    assert connection.settings_dict["NAME"] == test_name, "not on the e2e test database"
    return Data(llm=llm)


@pytest.fixture(autouse=True)
def _short_timeouts(request: pytest.FixtureRequest) -> None:
    if "page" in request.fixturenames:
        from playwright.sync_api import expect

        page = request.getfixturevalue("page")
        page.set_default_timeout(10_000)
        expect.set_options(timeout=10_000)


@pytest.fixture(autouse=True)
def browser_problems(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """Every browser test fails on a console error or warning or an uncaught exception in
    any page it opened (a test that provokes one on purpose removes it from this list)."""
    problems: list[str] = []
    if "page" not in request.fixturenames:
        yield problems
        return
    page = request.getfixturevalue("page")

    def on_console(message: Any) -> None:
        if message.type in {"error", "warning"}:
            where = message.location.get("url", "")
            problems.append(f"console.{message.type} at {page.url} ({where}): {message.text}")

    page.on("console", on_console)
    page.on("pageerror", lambda error: problems.append(f"uncaught at {page.url}: {error}"))
    yield problems
    assert problems == [], "the browser reported problems:\n" + "\n".join(problems)


@pytest.fixture
def shots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture
def readme_shot(shots: Path) -> Callable[..., None]:
    """Save a main state as ``tests/e2e/screenshots/<name>.png`` (git-ignored) and, when
    ``NETACLAW_DOCS_SCREENSHOTS=1``, as ``docs/screenshots/<docs>.png`` for the README::

        NETACLAW_DOCS_SCREENSHOTS=1 DJANGO_ALLOW_ASYNC_UNSAFE=true \\
            .venv/bin/pytest tests/e2e -p no:asyncio

    (Chinese needs a CJK font: ``apt-get install fonts-noto-cjk``.) ``whole=True`` makes
    the viewport as tall as the page for the shot: a ``full_page`` screenshot stitches the
    page together under a fixed viewport and leaves the sticky top bar floating mid-page.
    """

    def save(page: Any, name: str, *, docs: str | None = None, whole: bool = False) -> None:
        size = page.viewport_size
        if whole:
            height = page.evaluate("() => document.documentElement.scrollHeight")
            page.set_viewport_size({"width": size["width"], "height": max(size["height"], height)})
        try:
            path = shots / f"{name}.png"
            page.screenshot(path=path, animations="disabled")
        finally:
            if whole:
                page.set_viewport_size(size)
        if docs and os.environ.get("NETACLAW_DOCS_SCREENSHOTS") == "1":
            DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, DOCS_SCREENSHOTS / f"{docs}.png")

    return save
