"""Capataz settings: the one place that reads the environment.

Every environment variable goes through the helpers below, which fail loudly with
ImproperlyConfigured on a bad value. With nothing set, Capataz runs on the embedded default:
SQLite, the in-memory channel layer, Celery over the filesystem broker and the embedded engine.
"""

from __future__ import annotations

import math
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import dj_database_url
from django.core.checks.security.base import (
    SECRET_KEY_INSECURE_PREFIX,
    SECRET_KEY_MIN_LENGTH,
    SECRET_KEY_MIN_UNIQUE_CHARACTERS,
)
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_file(path: Path) -> dict[str, str]:
    """Read KEY=VALUE lines from .env (if present); the real environment wins."""
    if not path.exists():
        return {}
    values: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _sep, value = line.partition("=")
        values[key.strip()] = value.strip().strip("'\"")
    return values


_DOTENV = _env_file(BASE_DIR / ".env")


def env_str(name: str, default: str = "") -> str:
    """The variable's value; unset and empty (`DATABASE_URL=`) both mean the default."""
    return os.environ.get(name) or _DOTENV.get(name) or default


def env_bool(name: str, default: bool) -> bool:
    raw = env_str(name, "")
    if raw == "":
        return default
    lowered = raw.lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    """An integer; below `minimum` (1 for counts, limits and sizes; 0 where 0 means "off")
    stops start-up rather than locking everyone out or spinning a lease that never lasts."""
    raw = env_str(name, "")
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {raw!r}")
    return value


def env_float(name: str, default: float, *, positive: bool = False) -> float:
    """A finite number, never negative; more than 0 when `positive` (durations and leases)."""
    raw = env_str(name, "")
    if raw == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from exc
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        wanted = "more than 0" if positive else "0 or more"
        raise ImproperlyConfigured(f"{name} must be a number {wanted}, got {raw!r}")
    return value


def env_choice(name: str, default: str, choices: set[str]) -> str:
    raw = env_str(name, default)
    if raw not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {sorted(choices)}, got {raw!r}")
    return raw


def env_list(name: str, default: list[str]) -> list[str]:
    raw = env_str(name, "")
    if raw == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


_HOST_ENTRY = re.compile(
    r"(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+"  # (*.)host.name
    r"|https?://[a-z0-9.-]+(:[0-9]{1,5})?"  # or one exact origin (a local fake)
)


def env_hosts(name: str, default: list[str]) -> list[str]:
    """Hosts (`lookaside.fbsbx.com`), suffixes (`*.fbcdn.net`) or exact origins
    (`http://127.0.0.1:8765`); anything else — a path, a bare `*`, a typo — stops start-up."""
    hosts = [entry.lower() for entry in env_list(name, default)]
    for entry in hosts:
        if not _HOST_ENTRY.fullmatch(entry):
            raise ImproperlyConfigured(
                f"{name}: {entry!r} is not a host, a *.suffix or a scheme://host[:port] origin"
            )
    return hosts


DEVELOPMENT_SECRET_KEY = "capataz-insecure-development-key-do-not-use-in-production"


def weak_secret_key(key: str) -> str | None:
    """Why `key` is too weak to sign production sessions (Django's own W009 rules), or None."""
    if key.startswith(SECRET_KEY_INSECURE_PREFIX) or key == DEVELOPMENT_SECRET_KEY:
        return "it is a development key"
    if len(key) < SECRET_KEY_MIN_LENGTH:
        return f"it has fewer than {SECRET_KEY_MIN_LENGTH} characters"
    if len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS:
        return f"it has fewer than {SECRET_KEY_MIN_UNIQUE_CHARACTERS} different characters"
    return None


DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is false")
    SECRET_KEY = DEVELOPMENT_SECRET_KEY
elif not DEBUG and (weakness := weak_secret_key(SECRET_KEY)) is not None:
    raise ImproperlyConfigured(
        f"SECRET_KEY is too weak for DEBUG=false: {weakness}. Generate one with "
        "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
    )

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# --- HTTPS: on by default when DEBUG is false; each can be turned off (a dev box served over
# plain HTTP with DEBUG=false, or TLS ended somewhere that already sends HSTS) ---
# Behind a proxy that ends TLS: trust its X-Forwarded-Proto (only if it always sets it).
if env_bool("TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
# A year of HSTS for the host and its subdomains, preload-ready; 0 turns HSTS off.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000")
VAR_DIR = Path(env_str("CAPATAZ_VAR_DIR", str(BASE_DIR / "var")))
# A pytest-xdist worker ("gw0", "gw1", …: CI spreads the PostgreSQL + Redis run over several)
# keeps its files, and below its Redis database, apart from the other workers'.
# A process the worker starts (a Celery worker, `manage.py` in a subprocess) inherits the result
# through the environment and must not apply it twice.
TEST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if TEST_WORKER and os.environ.get("CAPATAZ_XDIST_APPLIED") == TEST_WORKER:
    TEST_WORKER = ""
if TEST_WORKER:
    VAR_DIR = VAR_DIR / f"xdist-{TEST_WORKER}"
    os.environ["CAPATAZ_VAR_DIR"] = str(VAR_DIR)
    os.environ["CAPATAZ_XDIST_APPLIED"] = TEST_WORKER

# The embedded router also learns from a corpus generated from the organisation's records
# (nlu/corpus, copilot/router_cache.py); off, it learns from the registry's examples only.
NLU_CORPUS = env_bool("NLU_CORPUS", True)
# A new organisation gets its copy of the shipped golden set (426 cases) once its creation
# commits; off, the evaluation pages install it when first opened (the test suite turns it off:
# it creates two organisations per test).
EVALUATION_GOLDEN_ON_CREATE = env_bool("EVALUATION_GOLDEN_ON_CREATE", True)

# How long a process keeps an organisation's agents and running A/B tests between turns
# (agents/cache.py; its own saves drop them at once). 0 reads them on every turn.
AGENTS_CACHE_SECONDS = float(os.environ.get("AGENTS_CACHE_SECONDS", "5"))
# The same for an organisation's model provider settings (llm/provider.py).
PROVIDER_CACHE_SECONDS = float(os.environ.get("PROVIDER_CACHE_SECONDS", "5"))

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "channels",
    "django_htmx",
    "django_celery_beat",
    "axes",
    "business",
    "agents",
    "llm",
    "approvals",
    "evaluation",
    "copilot",
    "whatsapp",  # a channel: copilot/channels.py
    "testing",  # test doubles and their demo commands (nothing imports it)
    "capataz",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "business.middleware.OrganisationMiddleware",
    "business.middleware.QueryHygieneMiddleware",
    # Last: turns a login refused for too many failures into the login page saying so.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "capataz.urls"
ASGI_APPLICATION = "capataz.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "business.context_processors.organisation",
                "approvals.context_processors.approvals",
                "whatsapp.context_processors.alerts",
            ],
        },
    },
]

# --- Database: SQLite by default, anything dj-database-url understands otherwise ---
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'capataz.sqlite3'}")
try:
    # Each thread (a request's, a turn runner's) keeps its connection for up to CONN_MAX_AGE
    # seconds, checked before reuse once per request or job: no reconnect per turn (issue 26).
    DATABASES: dict[str, Any] = {
        "default": dj_database_url.parse(
            DATABASE_URL,
            conn_max_age=env_int("CONN_MAX_AGE", 600, minimum=0),
            conn_health_checks=True,
        )
    }
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from exc
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes (daphne, the worker, beat) share one file: wait for locks instead of
    # failing, and let readers run during writes.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # Tests use a file too: an in-memory database shares one cache between connections, where a
    # write from another thread (a turn's runner) fails at once instead of waiting its turn.
    # One file per test process, so two suites can run side by side.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: channels, Celery, cache and locks when REDIS_URL is set ---
REDIS_URL = env_str("REDIS_URL", "")
if REDIS_URL and not REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured(f"REDIS_URL must start with redis://, got {REDIS_URL!r}")
if REDIS_URL and TEST_WORKER.removeprefix("gw").isdigit():
    # Worker N counts down from the URL's database (CI's /15 → 15, 14, 13): channel groups and
    # cache keys are named by primary keys, which each worker's test database reuses.
    _redis = urlsplit(REDIS_URL)
    _db = int(_redis.path.strip("/") or 0) - int(TEST_WORKER.removeprefix("gw"))
    REDIS_URL = urlunsplit(_redis._replace(path=f"/{_db % 16}"))
    os.environ["REDIS_URL"] = REDIS_URL

# Messages waiting per channel (and per process's sockets on Redis) before sends are dropped.
CHANNEL_CAPACITY = env_int("CHANNEL_CAPACITY", 2000, minimum=1)
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 reads with a 5 s socket timeout by default, the same as channels-redis's
            # 5 s blocking pop: an idle socket would time out and kill the consumer. Read longer.
            "CONFIG": {
                "hosts": [
                    {"address": REDIS_URL, "socket_timeout": 15, "socket_connect_timeout": 5}
                ],
                "prefix": "capataz:channels",
                # Messages a process's sockets may have waiting at once; over it, channels-redis
                # drops sends silently (the default, 100, dropped answers under load).
                "capacity": CHANNEL_CAPACITY,
            },
        }
    }
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "capataz",
        }
    }
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
else:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels.layers.InMemoryChannelLayer",
            "CONFIG": {"capacity": CHANNEL_CAPACITY},
        }
    }
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    _broker_dir = VAR_DIR / "celery" / "queue"
    _processed_dir = VAR_DIR / "celery" / "processed"
    _results_dir = VAR_DIR / "celery" / "results"
    for _folder in (_broker_dir, _processed_dir, _results_dir):
        _folder.mkdir(parents=True, exist_ok=True)
    # kombu's filesystem transport, with messages written atomically and unreadable ones set
    # aside in quarantine/ instead of stopping the worker (capataz/broker.py).
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT = "capataz.broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir),
        "data_folder_out": str(_broker_dir),
        "processed_folder": str(_processed_dir),
        "quarantine_folder": str(VAR_DIR / "celery" / "quarantine"),
        # kombu's exchange tables (the workers' pidbox), else written where the worker started.
        "control_folder": str(VAR_DIR / "celery" / "control"),
        "store_processed": False,
        "polling_interval": 0.1,
    }
    CELERY_RESULT_BACKEND = f"file://{_results_dir}"

CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "America/Argentina/Buenos_Aires"
# The beat schedule lives in the database (django-celery-beat): capataz/schedules.py installs
# each entry once after migrate, with a description of when it runs; admins edit them under
# "Periodic tasks". Entries here would be copied over the admins' edits on every start of beat.
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {}

# --- WhatsApp Cloud API (whatsapp/webhook.py, whatsapp/) ---
# The Graph API the outbox sends through; tests and the demo point it at a local fake server.
WHATSAPP_GRAPH_URL = env_str("WHATSAPP_GRAPH_URL", "https://graph.facebook.com")
WHATSAPP_GRAPH_VERSION = env_str("WHATSAPP_GRAPH_VERSION", "v21.0")
WHATSAPP_SEND_TIMEOUT = env_float("WHATSAPP_SEND_TIMEOUT", 10.0, positive=True)
# An outgoing message is tried this many times (back-off doubling from the base) before failing.
WHATSAPP_MAX_ATTEMPTS = env_int("WHATSAPP_MAX_ATTEMPTS", 5, minimum=1)
WHATSAPP_RETRY_BASE_SECONDS = env_float("WHATSAPP_RETRY_BASE_SECONDS", 2.0)
# Photos, voice notes and documents a customer sends (whatsapp/media.py): the largest
# accepted and the types accepted (checked against the Graph API's word and the file's own bytes).
WHATSAPP_IMAGE_MAX_BYTES = env_int("WHATSAPP_IMAGE_MAX_BYTES", 5 * 1024 * 1024, minimum=1)
WHATSAPP_IMAGE_TYPES = env_list("WHATSAPP_IMAGE_TYPES", ["image/jpeg", "image/png", "image/webp"])
WHATSAPP_AUDIO_MAX_BYTES = env_int("WHATSAPP_AUDIO_MAX_BYTES", 16 * 1024 * 1024, minimum=1)
WHATSAPP_AUDIO_TYPES = env_list(
    "WHATSAPP_AUDIO_TYPES", ["audio/ogg", "audio/mpeg", "audio/mp4", "audio/amr"]
)
WHATSAPP_DOCUMENT_MAX_BYTES = env_int("WHATSAPP_DOCUMENT_MAX_BYTES", 16 * 1024 * 1024, minimum=1)
WHATSAPP_DOCUMENT_TYPES = env_list("WHATSAPP_DOCUMENT_TYPES", ["application/pdf"])
# Where a media file may be downloaded from (the URL the Graph API answers, and every redirect
# hop): https hosts or *.suffixes — Meta's CDN by default — or an exact origin such as a local
# fake's "http://127.0.0.1:8765" (the only way plain http is allowed). The account's token goes
# only to the Graph API's own origin and to the hosts of WHATSAPP_MEDIA_TOKEN_HOSTS (Meta's
# lookaside URLs ask for it; the CDN's never see it).
WHATSAPP_MEDIA_HOSTS = env_hosts(
    "WHATSAPP_MEDIA_HOSTS", ["lookaside.fbsbx.com", "*.fbcdn.net", "*.whatsapp.net"]
)
WHATSAPP_MEDIA_TOKEN_HOSTS = env_hosts("WHATSAPP_MEDIA_TOKEN_HOSTS", ["lookaside.fbsbx.com"])
# Stored media (never served from MEDIA_URL: only through the tenancy-checked views).
MEDIA_ROOT = VAR_DIR / "media"

# --- Approvals (approvals/, copilot/receivers.py) ---
# Decided actions and their audit trail are kept this long; paused turns' checkpoints this long.
APPROVALS_RETENTION_DAYS = env_int("APPROVALS_RETENTION_DAYS", 180, minimum=1)
COPILOT_CHECKPOINT_DAYS = env_int("COPILOT_CHECKPOINT_DAYS", 14, minimum=1)
# An approved action whose run was cut off this long ago is failed (never run again).
APPROVALS_ABANDONED_MINUTES = env_int("APPROVALS_ABANDONED_MINUTES", 15, minimum=1)

# --- Turns as jobs (copilot/turn.py, copilot/runner.py, copilot/tasks.py) ---
# "celery": turns run on Celery workers consuming COPILOT_TURN_QUEUE (the default with Redis);
# "local": on worker threads of the process that accepted the message (the embedded default).
COPILOT_TURN_RUNNER = env_choice(
    "COPILOT_TURN_RUNNER", "celery" if REDIS_URL else "local", {"celery", "local"}
)
COPILOT_TURN_QUEUE = env_str("COPILOT_TURN_QUEUE", "turns")
CELERY_TASK_ROUTES = {"copilot.drain_conversation": {"queue": COPILOT_TURN_QUEUE}}
# Worker threads per process for the "local" runner.
COPILOT_LOCAL_RUNNERS = env_int("COPILOT_LOCAL_RUNNERS", 4, minimum=1)
# A runner renews its conversation's lease every third of this; one that died loses it after it.
COPILOT_LEASE_SECONDS = env_float("COPILOT_LEASE_SECONDS", 6.0, positive=True)
# On "local", the web process recovers what a previous run of it left (queued turns, turns cut
# short) as it starts, with no socket needed (capataz/asgi.py); the tests turn it off.
COPILOT_RECOVER_AT_START = env_bool("COPILOT_RECOVER_AT_START", True)
# On the embedded default (in-memory channel layer), the web process forwards to its sockets the
# events other processes (the Celery worker) wrote to the log, polling it four times a second.
COPILOT_EVENT_TAIL = env_bool("COPILOT_EVENT_TAIL", True)
# How long the event log keeps events for reconnecting clients.
COPILOT_EVENT_LOG_DAYS = env_int("COPILOT_EVENT_LOG_DAYS", 7, minimum=1)

# --- Models (the llm engine; without a key the embedded engine answers) ---
OPENAI_API_KEY = env_str("OPENAI_API_KEY", "")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "")
OPENAI_MODEL = env_str("OPENAI_MODEL", "gpt-4o-mini")
# Seconds to connect, and the longest silence allowed between two streamed chunks.
OPENAI_TIMEOUT = env_float("OPENAI_TIMEOUT", 20.0, positive=True)
# Retries of a 429/5xx/refused connection before any output, within a budget of seconds of waiting.
OPENAI_MAX_RETRIES = env_int("OPENAI_MAX_RETRIES", 2, minimum=0)
OPENAI_RETRY_BUDGET = env_float("OPENAI_RETRY_BUDGET", 10.0)
# The most tokens one model call may write, and the most seconds it may take end to end (a model
# that keeps streaming is cut there and the turn falls back; the timeout only bounds silences).
OPENAI_MAX_TOKENS = env_int("OPENAI_MAX_TOKENS", 1024, minimum=1)
OPENAI_CALL_DEADLINE = env_float("OPENAI_CALL_DEADLINE", 60.0, positive=True)
# What reads a customer's photo (empty: the default model; "off": photos are not read) and
# transcribes a voice note ("off": not transcribed); an organisation's settings may name its own.
OPENAI_VISION_MODEL = env_str("OPENAI_VISION_MODEL", "")
OPENAI_TRANSCRIPTION_MODEL = env_str("OPENAI_TRANSCRIPTION_MODEL", "whisper-1")
# A turn's own limits, shared by all its model calls (orchestrator, failsafe, every agent round):
# past them the next call is not made (or is cut) and the turn falls back to the embedded engine.
COPILOT_TURN_DEADLINE = env_float("COPILOT_TURN_DEADLINE", 120.0, positive=True)
COPILOT_TURN_TOKEN_BUDGET = env_int("COPILOT_TURN_TOKEN_BUDGET", 40000, minimum=1)
# The privacy guard (T4): phones, emails, CUIT/CUIL, DNI and card numbers are masked in every
# request to a model and put back in its answers; street addresses too when this is on.
COPILOT_PRIVACY_GUARD = env_bool("COPILOT_PRIVACY_GUARD", True)
COPILOT_PRIVACY_MASK_ADDRESSES = env_bool("COPILOT_PRIVACY_MASK_ADDRESSES", False)
# Fernet key for secrets stored in the database (organisations' API keys); empty: derived from
# SECRET_KEY. Keys stored under the derived key stay readable after setting this one.
FIELD_ENCRYPTION_KEY = env_str("FIELD_ENCRYPTION_KEY", "")

# --- Chat limits ---
COPILOT_MAX_MESSAGE_CHARS = env_int("COPILOT_MAX_MESSAGE_CHARS", 4000, minimum=1)

# --- The turn (copilot/orchestration/nodes.py) ---
# Clarifying questions in a row before a step must make its best choice (O8).
COPILOT_MAX_CLARIFICATIONS = env_int("COPILOT_MAX_CLARIFICATIONS", 2, minimum=0)
# Earlier messages the models read (llm and hybrid engines).
COPILOT_LLM_HISTORY = env_int("COPILOT_LLM_HISTORY", 10, minimum=0)
# ...and once the conversation has a summary (the working memory, O9), which they read instead
# of the older ones.
COPILOT_LLM_HISTORY_WITH_SUMMARY = env_int("COPILOT_LLM_HISTORY_WITH_SUMMARY", 4, minimum=0)
# On a model engine, a job after each turn asks the model for the conversation's gist (O9); the
# extractive summary is stored either way (copilot/summaries.py).
COPILOT_MODEL_SUMMARY = env_bool("COPILOT_MODEL_SUMMARY", True)
# Independent llm steps run at once (1: one after the other), and the simulated streaming delay
# between chunks of an answer that waited for the live slot (O7).
COPILOT_LLM_CONCURRENCY = env_int("COPILOT_LLM_CONCURRENCY", 4, minimum=1)
COPILOT_BUFFER_FLUSH_DELAY_MS = env_int("COPILOT_BUFFER_FLUSH_DELAY_MS", 15, minimum=0)

# --- Auth, i18n, static ---
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# --- Login throttling (django-axes): failures counted per username *and* IP together, so
# a locked pair neither locks the user out elsewhere nor blocks the office's other users. ---
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # refuses a locked-out pair before checking
    "django.contrib.auth.backends.ModelBackend",
]
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
# Minutes a locked pair waits; 0: until an admin unlocks it (admin → Access attempts).
LOGIN_LOCKOUT_MINUTES = env_int("LOGIN_LOCKOUT_MINUTES", 15, minimum=0)
AXES_COOLOFF_TIME = timedelta(minutes=LOGIN_LOCKOUT_MINUTES) if LOGIN_LOCKOUT_MINUTES else None
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "business.views.login_locked_out"
# The client's address is REMOTE_ADDR: behind a proxy, run daphne with --proxy-headers.
AXES_VERBOSE = False

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "es-ar"
LANGUAGES = [("es-ar", _("Spanish (Argentina)")), ("en", _("English"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "America/Argentina/Buenos_Aires"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # WeasyPrint narrates every PDF step by step at INFO ("weasyprint.progress"); keep its warnings.
    "loggers": {"weasyprint": {"level": "WARNING"}},
}
