"""Flakeboard settings, read from environment variables (all optional).

See docs/configuration.md for the list.
"""

import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from flakeboard.email_url import mailer
from flakeboard.environment import env, env_policy, envbool, envfloat, envint
from flakeboard.logs import logging_config
from flakeboard.read_replica import read_after_write_seconds, replica_database
from flakeboard.rules import POLICY_BOUNDS, POLICY_DEFAULTS

BASE_DIR = Path(__file__).resolve().parent.parent


def _secret_key():
    """The secret key: from the environment, a file, or (debug only) a generated local one."""
    if key := env("SECRET_KEY"):
        return key
    if path := env("SECRET_KEY_FILE"):
        return Path(path).read_text().strip()
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY (or SECRET_KEY_FILE) must be set when DEBUG is off.")
    local = BASE_DIR / ".secret_key"
    if not local.exists():
        local.write_text(secrets.token_urlsafe(50))
        local.chmod(0o600)
    return local.read_text().strip()


DEBUG = envbool("DEBUG", True)
SECRET_KEY = _secret_key()
ALLOWED_HOSTS = [
    h.strip() for h in env("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h
]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in env("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "axes",
    "ninja",  # the API docs' own static files: no CDN, no inline script
    "ledger",
    "runs",
    "junit",  # passive evidence: JUnit XML from every CI job
    "notify",  # the owners' digests (manage.py notify)
    "trackers",  # an issue per entry in GitHub, GitLab or Jira (manage.py sync_trackers)
    "board",  # the pages that compose the apps above
]

# The ledger fast path (ledger/api/fastpath.py) answers CI's ledger GET before sessions,
# CSRF, auth, messages and the API router: the middlewares that check the host and add
# headers to every answer come before it, so its answers carry the same headers.
MIDDLEWARE = [
    "web.metrics.ServerErrorCount",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.common.CommonMiddleware",
    "runs.api.download.ClientBuildHeaders",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "web.csp.ContentSecurityPolicyMiddleware",
    "ledger.api.fastpath.LedgerFastPath",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "web.remote_user.ProxyRemoteUserMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "flakeboard.urls"
WSGI_APPLICATION = "flakeboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "web.context_processors.rule_numbers",
            ],
        },
    },
]

# Persistent connections: each gunicorn worker thread keeps its own connection for
# CONN_MAX_AGE seconds (on SQLite, the PRAGMAs below run once) and holds no transaction
# between requests. Connection counts and PgBouncer: docs/deployment.md. Behind PgBouncer in
# transaction mode, DISABLE_SERVER_SIDE_CURSORS turns off the CSV exports' cursors.
DATABASES = {
    "default": dj_database_url.parse(
        env("DATABASE_URL", f"sqlite:///{BASE_DIR / 'flakeboard.sqlite3'}"),
        conn_max_age=envint("CONN_MAX_AGE", 60),
        disable_server_side_cursors=envbool("DISABLE_SERVER_SIDE_CURSORS", False),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers run beside the single writer; the busy timeout makes a second
    # writer wait for the lock instead of failing with "database is locked". A commit leaving
    # this many WAL pages checkpoints (SQLite's 1,000: every 10,000-test JUnit upload did, B7).
    SQLITE_WAL_CHECKPOINT_PAGES = 16_384
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                        f"PRAGMA wal_autocheckpoint={SQLITE_WAL_CHECKPOINT_PAGES};",
    }
# READ_DATABASE_URL: a replica that answers the pages' reads (flakeboard/read_replica.py).
if READ_DATABASE_URL := env("READ_DATABASE_URL", ""):
    DATABASES["replica"] = replica_database(READ_DATABASE_URL, DATABASES["default"])
    DATABASE_ROUTERS = ["web.replica.ReadReplicaRouter"]
    MIDDLEWARE.insert(1, "web.read_routing.ReadRouting")  # before anything reads
READ_AFTER_WRITE_SECONDS = read_after_write_seconds()


def _cache(url: str) -> dict:
    """CACHE_URL: where the served ledger's bytes are cached (see docs/configuration.md)."""
    scheme, _, location = url.partition("://")
    backends = {
        "locmem": "django.core.cache.backends.locmem.LocMemCache",
        "redis": "django.core.cache.backends.redis.RedisCache",
        "rediss": "django.core.cache.backends.redis.RedisCache",
        "memcached": "django.core.cache.backends.memcached.PyMemcacheCache",
        "dummy": "django.core.cache.backends.dummy.DummyCache",
    }
    if scheme not in backends:
        raise ImproperlyConfigured(
            f"CACHE_URL must start with one of {', '.join(f'{s}://' for s in backends)}."
        )
    if scheme.startswith("redis"):
        location = url
    return {"BACKEND": backends[scheme], "LOCATION": location or "flakeboard"}


# Local memory by default: each worker process caches on its own. A shared cache (Redis,
# memcached) lets the workers and servers build each ledger revision once between them.
CACHES = {"default": _cache(env("CACHE_URL", "locmem://"))}

# Where each worker listens for changes to tokens and suites: see ledger/changes.py.
LISTEN_URL = env("LISTEN_URL", "")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Sign-in throttling (django-axes): after AXES_FAILURE_LIMIT failed attempts for one user
# name from one address, that pair is locked out for the cool-off time.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    # Asked only by the remote-user middleware, which runs only when REMOTE_USER_HEADER is set.
    "web.remote_user.ProxyRemoteUserBackend",
]
# Sign-in through an authenticating proxy: the header (e.g. X-Forwarded-User) that carries
# the signed-in user's name. Empty: off, and the header is ignored. The proxy must strip it
# from what clients send.
REMOTE_USER_HEADER = env("REMOTE_USER_HEADER", "").strip()
# GET /metrics (Prometheus) answers only this bearer token; empty: the endpoint is off (404).
METRICS_TOKEN = env("METRICS_TOKEN", "").strip()
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/lockout.html"
AXES_VERBOSE = False
# The address is the client's, not our proxy's: behind N proxies of our own, the N-th
# X-Forwarded-For entry from the right (web/client_ip.py). 0 ignores the header, which
# anyone can write.
FLAKEBOARD_TRUSTED_PROXIES = envint("FLAKEBOARD_TRUSTED_PROXIES", 0)
if FLAKEBOARD_TRUSTED_PROXIES < 0:
    raise ImproperlyConfigured("FLAKEBOARD_TRUSTED_PROXIES is a count of proxies: 0 or more.")
AXES_CLIENT_IP_CALLABLE = "web.client_ip.request_client_address"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": env(
            "STATICFILES_BACKEND",
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage",
        )
    },
}

# Uploads: a body over this size is answered with 413 on every path.
UPLOAD_MAX_BYTES = envint("UPLOAD_MAX_BYTES", 32 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = UPLOAD_MAX_BYTES
# ... and one holding more rows, with 413 too: 32 MiB holds some 960,000 rows. The default
# is what the board ingests within gunicorn's 30 s worker timeout with room to spare (bench
# B8, docs/benchmarks.md). Raise it only with a longer gunicorn --timeout.
UPLOAD_MAX_RECORDS = envint("UPLOAD_MAX_RECORDS", 100_000)
if UPLOAD_MAX_RECORDS < 1:
    raise ImproperlyConfigured("UPLOAD_MAX_RECORDS is a count of rows: 1 or more.")

# JUnit files' raw testcase rows (and the per-commit counts detection reads) are kept this
# many days; `manage.py prune_junit` deletes older ones. The per-day rollups are kept.
JUNIT_RETENTION_DAYS = envint("JUNIT_RETENTION_DAYS", 30)
if JUNIT_RETENTION_DAYS < 1:
    raise ImproperlyConfigured("JUNIT_RETENTION_DAYS is a count of days: 1 or more.")

# Reports and verdict batches (their raw rows) are kept this many days; `manage.py prune`
# deletes older ones. Rollups, entries and audit events are kept whole.
RETENTION_DAYS = envint("RETENTION_DAYS", 400)
if RETENTION_DAYS < 1:
    raise ImproperlyConfigured("RETENTION_DAYS is a count of days: 1 or more.")

# E-mail (the notify command's digests): EMAIL_URL names the backend and server; links in
# a digest are absolute, on the board's public address.
MAILERS = {"default": mailer(env("EMAIL_URL", "console:"))}
# Mail is optional: a board deployed without EMAIL_URL prints what it would send, and
# `check --deploy` passes; an EMAIL_URL that names a development backend is still flagged.
SILENCED_SYSTEM_CHECKS = [] if env("EMAIL_URL") else ["mail.E001"]
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", "Flakeboard <flakeboard@localhost>")
BASE_URL = env("BASE_URL", "http://127.0.0.1:8000").rstrip("/")
if not BASE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured("BASE_URL is the board's public address: http(s)://host[:port].")
# Webhooks never reach loopback, private or other non-public addresses unless this is set.
WEBHOOKS_ALLOW_PRIVATE_IPS = envbool("WEBHOOKS_ALLOW_PRIVATE_IPS", False)
# Seconds a webhook POST waits to connect and for each read before it counts as a timeout.
WEBHOOKS_TIMEOUT = envfloat("WEBHOOKS_TIMEOUT", 5.0)
if not 0 < WEBHOOKS_TIMEOUT <= 60:
    raise ImproperlyConfigured("WEBHOOKS_TIMEOUT is in seconds: more than 0, at most 60.")
# The CA certificates (PEM) that https webhooks are verified against instead of the
# system's, for receivers behind a private CA; empty, the system's trust store.
WEBHOOKS_CA_FILE = env("WEBHOOKS_CA_FILE", "")
if WEBHOOKS_CA_FILE and not Path(WEBHOOKS_CA_FILE).is_file():
    raise ImproperlyConfigured(f"WEBHOOKS_CA_FILE {WEBHOOKS_CA_FILE} is not a file.")

# New suites' policy numbers (DEFAULT_MIN_RUNS...), each refused outside a suite's own range.
FLAKEBOARD_DEFAULT_POLICY = env_policy(POLICY_DEFAULTS, POLICY_BOUNDS)

# Security headers. The CSP forbids inline scripts: every script is a static file.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
if not DEBUG:
    SESSION_COOKIE_SECURE = envbool("SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = envbool("SECURE_COOKIES", True)
    SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        # Preloading commits the whole domain to HTTPS in browsers for good: the owner of
        # the domain opts in with SECURE_HSTS_PRELOAD, so its absence is not a warning.
        SILENCED_SYSTEM_CHECKS.append("security.W021")
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOG_LEVEL = env("LOG_LEVEL", "WARNING")
LOGGING = logging_config(LOG_LEVEL)  # a 4xx is logged as its line alone (flakeboard/logs.py)
