"""Settings, all driven by the environment (CONTRACT §2).

Zero-setup default: SQLite and the in-memory channel layer. Production: set
DATABASE_URL (PostgreSQL), REDIS_URL, DJANGO_SECRET_KEY and DJANGO_DEBUG=0.
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url
from csp.constants import NONCE, NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

from netaclaw.proxies import parse_networks

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("NETACLAW_VAR_DIR", BASE_DIR / "var"))


def _env_flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def _dev_secret_key() -> str:
    """A generated key kept in var/ so sessions survive restarts of a dev server."""
    path = VAR_DIR / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(50)
        path.write_text(key)
        path.chmod(0o600)
        return key


DEBUG = _env_flag("DJANGO_DEBUG", True)
SECRET_KEY_IS_GENERATED = not os.environ.get("DJANGO_SECRET_KEY")
if SECRET_KEY_IS_GENERATED and not DEBUG:
    # Whatever starts the server (Daphne directly, a command): never sign sessions and
    # tokens in production with a key that sits in var/.
    raise ImproperlyConfigured(
        "DJANGO_DEBUG=0 needs DJANGO_SECRET_KEY: set it to a long random value "
        "(the generated development key is never used in production)."
    )
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or _dev_secret_key()
ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")
    if h.strip()
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]
# Reverse proxies whose X-Forwarded-For and X-Forwarded-Proto count (addresses or networks,
# comma-separated); from any other peer they are dropped (netaclaw.proxies). Run Daphne
# without --proxy-headers: it would take the address the client wrote first.
try:
    TRUSTED_PROXIES = parse_networks(os.environ.get("NETACLAW_TRUSTED_PROXIES", ""))
except ValueError as exc:
    raise ImproperlyConfigured(f"NETACLAW_TRUSTED_PROXIES: {exc}") from None
if TRUSTED_PROXIES:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_htmx",
    "axes",
    "csp",
    "netaclaw",
    "system",
    "agents",
    "compaction",
    "recall",
    "web",
    "channels_app",
    "runs",
]

MIDDLEWARE = [
    "netaclaw.proxies.trusted_proxy_middleware",  # first: the client's address (netaclaw.proxies)
    "django.middleware.security.SecurityMiddleware",
    "web.api_json_errors.api_json_errors",  # Django's HTML error pages under /api/ become JSON
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a login lockout into its answer
]

ROOT_URLCONF = "netaclaw.urls"
ASGI_APPLICATION = "netaclaw.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
                "web.context_processors.csp_nonce",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        # Production keeps connections: every ORM call of a socket is wrapped in
        # close_old_connections(), so with 0 each one opened a new PostgreSQL backend — most
        # of a chat turn's cost under load (bench.ws_load). Development and tests keep 0:
        # worker threads' connections would outlive the test database.
        # No health checks (Django's default): Channels closes old connections around every
        # ORM call of a socket, so each call would start with a ``SELECT 1`` round trip —
        # two of a chat turn's ten statements (bench.ws_load). A connection the server
        # dropped fails one call and is then replaced.
        conn_max_age=0 if DEBUG else 600,
        conn_health_checks=False,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    if os.environ.get("NETACLAW_DB_PREPARED_STATEMENTS", "1") != "0":
        # A chat turn runs the same few statements every time; prepared after their second
        # run, PostgreSQL stops parsing and planning them: its CPU per turn ~1.6 → 0.9 ms,
        # on the cores the server shares (bench.ws_load). Django leaves them off for the
        # sake of transaction-mode poolers (PgBouncer): set NETACLAW_DB_PREPARED_STATEMENTS=0
        # behind one.
        DATABASES["default"].setdefault("OPTIONS", {}).update(
            {"server_side_binding": True, "prepare_threshold": 2}
        )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The zero-setup database is written by two threads at once (a compaction's worker and
    # the chat turns). Deferred transactions that later write fail at once with "database is
    # locked" instead of waiting; IMMEDIATE ones wait out the busy timeout, and WAL lets
    # readers go on meanwhile. The test database is a file too: an in-memory shared cache
    # has table locks that never wait.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-db.sqlite3")}
if os.environ.get("NETACLAW_TEST_DB_NAME"):
    DATABASES["default"]["TEST"] = {"NAME": os.environ["NETACLAW_TEST_DB_NAME"]}

REDIS_URL = os.environ.get("REDIS_URL") or None

# Where turns and compactions run (issue 24; ``runs.runner``): ``worker`` — durable jobs on
# Procrastinate in PostgreSQL, run by ``make worker`` processes apart from the web —
# whenever PostgreSQL and Redis are configured; ``inprocess`` — tasks of the web process —
# otherwise (``make run``: one process, no other service).
_postgres = DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
RUNNER = os.environ.get("NETACLAW_RUNNER") or ("worker" if _postgres and REDIS_URL else "inprocess")
if RUNNER not in {"worker", "inprocess"}:
    raise ImproperlyConfigured("NETACLAW_RUNNER must be worker or inprocess")
if RUNNER == "worker" and not (_postgres and REDIS_URL):
    raise ImproperlyConfigured("NETACLAW_RUNNER=worker needs PostgreSQL and REDIS_URL")
if _postgres:  # its tables are PostgreSQL's: with SQLite jobs run in the web process
    INSTALLED_APPS.insert(INSTALLED_APPS.index("runs"), "procrastinate.contrib.django")
    PROCRASTINATE_AUTODISCOVER_MODULE_NAME = ""
    PROCRASTINATE_IMPORT_PATHS = ["runs.worker"]
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # redis-py 8 reads with a 5 s socket timeout by default, the same as
                # channels-redis's blocking pop: every idle consumer then died with 1011
                # (django/channels_redis#422). Reads may wait longer than the pop.
                # redis-py 8 also caps a pool at 100 connections and then fails at once:
                # channels-redis takes one per command, so 100+ layer calls in flight (a few
                # hundred sockets joining their groups together) closed sockets with 1011.
                "hosts": [{"address": REDIS_URL, "socket_timeout": 30, "max_connections": 2000}],
                "prefix": os.environ.get("NETACLAW_CHANNEL_PREFIX", "netaclaw"),
                # Per process, not per socket: every consumer of a process shares one Redis
                # list, and group_send silently drops what does not fit — a few hundred
                # sockets' turns (six events each) lost their turn_done at 1000.
                "capacity": 100_000,
                "expiry": 60,
            },
        }
    }
else:
    CHANNEL_LAYERS = {
        "default": {
            # Channels' in-memory layer holds 100 messages per socket and drops the rest
            # silently: a burst of 300 turns on one socket lost 125 of its 300 turn_done.
            # Ours holds 10,000 per socket and, past that, makes the publisher wait (up to
            # send_timeout seconds) instead of dropping (channels_app/layers.py).
            "BACKEND": "channels_app.layers.InMemoryChannelLayer",
            "CONFIG": {"capacity": 10_000, "expiry": 60, "send_timeout": 10},
        }
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Login throttling (django-axes): after AXES_FAILURE_LIMIT wrong passwords for one account
# from one address, logins of that account from that address are refused — the login page
# and POST /api/auth/token/ alike — until AXES_COOLOFF_TIME has passed since the last
# failure. Keyed to account *and* address by default: per account alone, five anonymous
# requests locked anyone out (the admin too), and per address everyone behind it (issue 27
# item 7). NETACLAW_LOGIN_LOCKOUT=account_or_address locks an account from every address
# and an address for every account, as before. Attempts and lockouts are in the admin (Axes
# → access attempts, with an Unlock action; Users → Unlock logins); `manage.py axes_reset`
# and its siblings unlock from the shell.
AUTHENTICATION_BACKENDS = [
    "web.accounts.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("NETACLAW_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(seconds=int(os.environ.get("NETACLAW_LOGIN_COOLOFF_SECONDS", "900")))
LOGIN_LOCKOUTS: dict[str, list[Any]] = {
    "account_and_address": [["username", "ip_address"]],
    "account_or_address": ["username", "ip_address"],
}
LOGIN_LOCKOUT = os.environ.get("NETACLAW_LOGIN_LOCKOUT", "account_and_address").strip()
if LOGIN_LOCKOUT not in LOGIN_LOCKOUTS:
    raise ImproperlyConfigured(
        f"NETACLAW_LOGIN_LOCKOUT must be one of {', '.join(LOGIN_LOCKOUTS)}, not {LOGIN_LOCKOUT!r}"
    )
AXES_LOCKOUT_PARAMETERS = LOGIN_LOCKOUTS[LOGIN_LOCKOUT]
# the client's address as netaclaw.proxies settled it (trusted proxies only)
AXES_CLIENT_IP_CALLABLE = "netaclaw.proxies.client_ip"
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # the cool-off is not extended
AXES_LOCKOUT_CALLABLE = "web.accounts.lockout_response"
AXES_VERBOSE = False
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/chat/"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "zh-hans"
LANGUAGES = [("zh-hans", _("Simplified Chinese")), ("en", _("English"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
if not DEBUG:
    SESSION_COOKIE_SECURE = _env_flag("DJANGO_SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
    # HTTPS only: plain HTTP is redirected, and browsers are told (HSTS) to use nothing
    # else. Behind a TLS proxy run `daphne --proxy-headers` so X-Forwarded-Proto counts.
    SECURE_SSL_REDIRECT = _env_flag("DJANGO_SECURE_SSL_REDIRECT", True)
    # probes talk to the process directly, over plain HTTP
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_flag("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = _env_flag("DJANGO_SECURE_HSTS_PRELOAD", True)

# Content-Security-Policy (django-csp), in every mode so development and the browser tests
# run under it: scripts and styles from this server or carrying the response's nonce (the
# htmx script tags and htmx's indicator style, ``inlineStyleNonce``), style attributes (the
# token bar's width), sockets and requests to this origin only; no plugins, no framing.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, NONCE],
        "style-src-attr": [UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "web.api_auth.ExpiringTokenAuthentication",
    ],
    "DEFAULT_PARSER_CLASSES": [
        "web.api_errors.JSONBodyParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "EXCEPTION_HANDLER": "web.api_errors.api_exception_handler",
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": None,
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "NetaClaw API",
    "DESCRIPTION": "Chat sessions with LLM agents and their context compaction.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # the OpenAI-compatible endpoints are async Django views: written in by this hook
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "web.openai_schema.add_openai_paths",
    ],
}

# Daphne's own limit on a WebSocket message and frame, either way (autobahn closes the socket
# over it: 1009 for one it receives, 1011 for one it would send). Read by Daphne's runserver;
# `make run` passes the same figure to the daphne command (``--websocket-max-message-size``).
# Far above MAX_FRAME_BYTES, so that an oversized client frame reaches the consumer and is
# answered with an error instead of dropping the connection; only authenticated sockets are
# accepted, so only they can send one.
DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE = 8 * 1024 * 1024
DAPHNE_WEBSOCKET_MAX_FRAME_SIZE = DAPHNE_WEBSOCKET_MAX_MESSAGE_SIZE

# NetaClaw's own knobs.
NETACLAW: dict[str, Any] = {
    # Seconds a compaction lease is held before another process may take it over.
    "COMPACTION_LEASE_SECONDS": int(os.environ.get("NETACLAW_COMPACTION_LEASE_SECONDS", "45")),
    # Prepare the next summary in the background from 10 points below an agent's threshold,
    # so the turn that crosses it does not wait for the auxiliary model (compaction.background).
    "BACKGROUND_COMPACTION": os.environ.get("NETACLAW_BACKGROUND_COMPACTION", "1") != "0",
    # Seconds the auxiliary model may take to answer one summary request.
    "AUXILIARY_TIMEOUT_SECONDS": float(os.environ.get("NETACLAW_AUXILIARY_TIMEOUT", "120")),
    # Per-session tool workspaces live below this folder.
    "WORKSPACE_ROOT": Path(os.environ.get("NETACLAW_WORKSPACE_ROOT", VAR_DIR / "workspaces")),
    # Seconds an API token is valid after it was issued (0: no expiry); a password change
    # deletes a user's tokens either way.
    "TOKEN_TTL_SECONDS": int(os.environ.get("NETACLAW_TOKEN_TTL_SECONDS", str(30 * 86400))),
    # Seconds between two checks of the open sockets' credentials in each process: a socket
    # whose user was deactivated or re-passworded without signals (a queryset update, another
    # process's command) or whose token expired is closed within this (channels_app.socket_watch).
    "SOCKET_RECHECK_SECONDS": float(os.environ.get("NETACLAW_SOCKET_RECHECK_SECONDS", "10")),
    # Largest WebSocket text frame accepted from a client, in bytes: a larger one is
    # answered with an ``error`` (frame_too_large). The server's own frames are at most
    # this too, and never over 512 KiB (channels_app.framing).
    "MAX_FRAME_BYTES": int(os.environ.get("NETACLAW_MAX_FRAME_BYTES", str(256 * 1024))),
    # Tool limits (agents.tools.limits): bytes one session's workspace may hold (a folder
    # counts as its size on disk, at least 4,096 bytes); seconds
    # one tool call may take; bytes one write_file call may write; bytes of JSON arguments
    # per tool call and per model step; tool calls run per model step.
    "WORKSPACE_QUOTA_BYTES": int(os.environ.get("NETACLAW_WORKSPACE_QUOTA_BYTES", "20000000")),
    # issue 26 item 4: the largest file one upload may add to a chat's workspace
    "ATTACHMENT_MAX_BYTES": int(os.environ.get("NETACLAW_ATTACHMENT_MAX_BYTES", "10000000")),
    # Folders one workspace may hold, and folders deep a file may lie: a deep or wide tree
    # of empty folders cost disk and stalled every walk of the workspace (issue 27 items 3-4).
    "WORKSPACE_MAX_FOLDERS": int(os.environ.get("NETACLAW_WORKSPACE_MAX_FOLDERS", "1000")),
    "WORKSPACE_MAX_DEPTH": int(os.environ.get("NETACLAW_WORKSPACE_MAX_DEPTH", "32")),
    "TOOL_TIMEOUT_SECONDS": float(os.environ.get("NETACLAW_TOOL_TIMEOUT_SECONDS", "30")),
    "TOOL_WRITE_BYTES": int(os.environ.get("NETACLAW_TOOL_WRITE_BYTES", "1000000")),
    "TOOL_ARGUMENT_BYTES": int(os.environ.get("NETACLAW_TOOL_ARGUMENT_BYTES", "1500000")),
    "TOOL_STEP_ARGUMENT_BYTES": int(os.environ.get("NETACLAW_TOOL_STEP_ARGUMENT_BYTES", "3000000")),
    "TOOL_CALLS_PER_STEP": int(os.environ.get("NETACLAW_TOOL_CALLS_PER_STEP", "16")),
    # Characters one model answer may have: the rest of its stream is not read, the answer
    # is stored cut, with a marker (issue 27 item 11: a 10 MB answer stalled the page).
    "MAX_ANSWER_CHARS": int(os.environ.get("NETACLAW_MAX_ANSWER_CHARS", "500000")),
    # Bytes a socket's client may leave unread before the server drops it: the page then
    # reconnects and resumes; a client that never reads cannot grow the server's memory.
    "WS_MAX_PENDING_BYTES": int(os.environ.get("NETACLAW_WS_MAX_PENDING_BYTES", "8388608")),
    "RUNNER": RUNNER,
    # SIGTERM to a web process of ``make run``: seconds its running turns get to finish
    # before they are recorded as interrupted (``runs.inprocess``).
    "DRAIN_SECONDS": float(os.environ.get("NETACLAW_DRAIN_SECONDS", "20")),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("NETACLAW_LOG_LEVEL", "INFO")},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
        "axes": {"level": "WARNING"},  # every login attempt at INFO; lockouts stay visible
        # one line per process start ("Adding tasks from blueprint"): commands print nothing
        "procrastinate.blueprints": {"level": "WARNING"},
    },
}
