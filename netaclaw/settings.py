"""Settings, all driven by the environment (CONTRACT §2).

Zero-setup default: SQLite and the in-memory channel layer. Production: set
DATABASE_URL (PostgreSQL), REDIS_URL, DJANGO_SECRET_KEY and DJANGO_DEBUG=0.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import dj_database_url
from django.utils.translation import gettext_lazy as _

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
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or _dev_secret_key()
ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")
    if h.strip()
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

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
    "netaclaw",
    "system",
    "agents",
    "compaction",
    "web",
    "channels_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
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
        conn_max_age=0 if DEBUG else 600,
        conn_health_checks=not DEBUG,
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
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
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

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
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
}

# NetaClaw's own knobs.
NETACLAW = {
    # Seconds a compaction lease is held before another process may take it over.
    "COMPACTION_LEASE_SECONDS": int(os.environ.get("NETACLAW_COMPACTION_LEASE_SECONDS", "45")),
    # Seconds the auxiliary model may take to answer one summary request.
    "AUXILIARY_TIMEOUT_SECONDS": float(os.environ.get("NETACLAW_AUXILIARY_TIMEOUT", "120")),
    # Per-session tool workspaces live below this folder.
    "WORKSPACE_ROOT": Path(os.environ.get("NETACLAW_WORKSPACE_ROOT", VAR_DIR / "workspaces")),
    # Largest WebSocket text frame accepted from a client, in bytes.
    "MAX_FRAME_BYTES": int(os.environ.get("NETACLAW_MAX_FRAME_BYTES", str(256 * 1024))),
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
    },
}
