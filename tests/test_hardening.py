"""Hardening: the production settings pass `check --deploy`, every page carries a
Content-Security-Policy that its own HTML obeys, cookies are secure and HSTS is sent when
debug is off, sign-in is throttled, tokens are stored hashed and compared in constant
time, and every upload path has a size limit."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from datetime import timedelta
from html.parser import HTMLParser
from io import StringIO
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.apps import apps
from django.conf import settings
from django.contrib.sessions.models import Session
from django.core.management import CommandError, call_command
from django.db import models
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ledger import tokens
from ledger.models import ApiToken
from ledger.quarantine import quarantine_create
from ledger.tokens import token_authenticate, token_create
from runs.ingest import report_ingest, signals_ingest
from tests.conftest import PASSWORD
from tests.helpers import body, measurement, node_page, record

ROOT = Path(__file__).resolve().parent.parent


def production_env(tmp_path) -> dict:
    """The environment docs/deployment.md documents, on a throwaway database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "SECURE_"))}
    env.update(
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(60),
        ALLOWED_HOSTS="flakeboard.example.com",
        CSRF_TRUSTED_ORIGINS="https://flakeboard.example.com",
        DATABASE_URL=f"sqlite:///{tmp_path / 'deploy.sqlite3'}",
        DJANGO_SETTINGS_MODULE="flakeboard.settings",
        PYTHONPATH=str(ROOT),
    )
    return env


@pytest.mark.slow
def test_check_deploy_is_clean_under_the_production_environment(tmp_path):
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=production_env(tmp_path), capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout


PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.test import Client
client = Client(HTTP_HOST="flakeboard.example.com")
plain = client.get("/accounts/login/")
tls = client.get("/accounts/login/", secure=True)
cookie = tls.cookies.get("csrftoken")
print(json.dumps({
    "redirect": [plain.status_code, plain.get("Location")],
    "hsts": tls.get("Strict-Transport-Security"),
    "csrf_cookie_secure": bool(cookie and cookie["secure"]),
    "session_cookie_secure": settings.SESSION_COOKIE_SECURE,
    "csrf_setting_secure": settings.CSRF_COOKIE_SECURE,
    "frame": tls.get("X-Frame-Options"),
    "csp": tls.get("Content-Security-Policy"),
}))
"""


@pytest.mark.slow
def test_production_sends_hsts_secure_cookies_and_redirects_to_https(tmp_path):
    env = production_env(tmp_path)
    # The page's static links need no collectstatic for this check.
    env["STATICFILES_BACKEND"] = "django.contrib.staticfiles.storage.StaticFilesStorage"
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["redirect"] == [301, "https://flakeboard.example.com/accounts/login/"]
    assert seen["hsts"] == "max-age=31536000; includeSubDomains"
    assert seen["csrf_cookie_secure"] and seen["csrf_setting_secure"]
    assert seen["session_cookie_secure"]
    assert seen["frame"] == "DENY"
    assert "'unsafe-inline'" not in seen["csp"] and "script-src 'self'" in seen["csp"]


def test_debug_settings_keep_cookies_http_only():
    assert settings.SESSION_COOKIE_HTTPONLY
    assert settings.X_FRAME_OPTIONS == "DENY"


# --- the board's own pages obey its CSP -----------------------------------------------


class InlineFinder(HTMLParser):
    """Collects what a CSP without 'unsafe-inline' would block."""

    def __init__(self):
        super().__init__()
        self.blocked: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script" and not attrs.get("src") and attrs.get("type") != "application/json":
            self.blocked.append("inline <script>")
        if tag == "style":
            self.blocked.append("<style> element")
        for name in attrs:
            if name.startswith("on") or name.startswith("hx-on") or name == "style":
                self.blocked.append(f"{name}= on <{tag}>")
            if name in ("href", "src", "action") and (attrs[name] or "").startswith(
                "javascript:"
            ):
                self.blocked.append(f"javascript: URL on <{tag}>")


@pytest.fixture
def furnished(suite, lead, today):
    """A suite with one of everything its pages show."""
    rows = [measurement(f"tests/test_{i}.py::test_ok") for i in range(30)]
    rows.append(measurement("tests/test_flaky.py::test_once", fails=9))
    report = report_ingest(suite=suite, body=body(rows), actor="ci").upload
    batch = signals_ingest(suite=suite, body=body([record("tests/test_0.py::test_ok")]),
                           actor="ci").upload
    entry = quarantine_create(
        suite=suite, nodeid="tests/test_flaky.py::test_once", owner="@finley",
        expires=today + timedelta(days=10), evidence="ci/run-1", actor="@lea", today=today,
    )
    return {"report": report, "batch": batch, "entry": entry}


def board_pages(suite, furnished) -> list[str]:
    slug = suite.slug
    return [
        reverse("login"),
        reverse("home"),
        reverse("overview", args=[slug]),
        reverse("ledger", args=[slug]),
        reverse("entry", args=[slug, furnished["entry"].pk]),
        reverse("entry_new", args=[slug]),
        reverse("entry_renew", args=[slug, furnished["entry"].pk]),
        reverse("entry_clear", args=[slug, furnished["entry"].pk]),
        reverse("reports", args=[slug]),
        reverse("report", args=[slug, furnished["report"].pk]),
        reverse("verdicts", args=[slug]),
        reverse("batch", args=[slug, furnished["batch"].pk]),
        node_page(slug, "tests/test_flaky.py::test_once"),
        reverse("trends", args=[slug]),
        reverse("settings", args=[slug]),
        reverse("admin:index"),
        "/api/v1/docs",
    ]


def test_every_page_has_a_strict_csp_and_no_inline_script(client_for, staff, suite, furnished):
    client = client_for(staff)
    for url in board_pages(suite, furnished):
        response = client.get(url, follow=True)
        assert response.status_code == 200, url
        policy = response["Content-Security-Policy"]
        assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy, url
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy, url
        assert response["X-Frame-Options"] == "DENY", url
        if url.startswith("/admin/"):
            continue  # Django's own admin templates, outside the board's pages
        finder = InlineFinder()
        finder.feed(response.content.decode())
        assert finder.blocked == [], f"{url}: {finder.blocked}"


# --- sign-in throttling ---------------------------------------------------------------


def _sign_in(client, username, password):
    return client.post(reverse("login"), {"username": username, "password": password})


def test_sign_in_is_locked_after_five_failures_for_that_user_and_address(owner, viewer):
    client = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _sign_in(client, owner.username, "wrong").status_code == 200
    locked = _sign_in(client, owner.username, "wrong")
    assert locked.status_code == 429
    assert b"Sign-in paused" in locked.content and b"15 minutes" in locked.content
    # Locked out even with the right password, until the cool-off ends.
    assert _sign_in(client, owner.username, PASSWORD).status_code == 429
    # Another user name from the same address, and the same one from elsewhere, still may.
    assert _sign_in(client, viewer.username, PASSWORD).status_code == 302
    elsewhere = Client(REMOTE_ADDR="198.51.100.4")
    assert _sign_in(elsewhere, owner.username, PASSWORD).status_code == 302
    # After the cool-off the user signs in again.
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    assert _sign_in(client, owner.username, PASSWORD).status_code == 302


def test_a_success_resets_the_failure_count(owner):
    client = Client(REMOTE_ADDR="203.0.113.10")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _sign_in(client, owner.username, "wrong")
    assert _sign_in(client, owner.username, PASSWORD).status_code == 302
    client.logout()
    assert _sign_in(client, owner.username, "wrong").status_code == 200  # not locked


# --- tokens ---------------------------------------------------------------------------


def _stored_text(instance) -> list[str]:
    """Each text the row stores, a session's decoded data included."""
    values = [json.dumps(instance.get_decoded())] if isinstance(instance, Session) else []
    for field in instance._meta.concrete_fields:
        value = getattr(instance, field.attname)
        if isinstance(field, models.JSONField):
            values.append(json.dumps(value))
        elif isinstance(value, str):
            values.append(value)
    return values


def test_tokens_are_stored_hashed_nowhere_in_plaintext(client_for, lead, suite):
    made = [token_create(suite=suite, scope=scope, actor="@lea")[1] for scope in ("read", "write")]
    response = client_for(lead).post(reverse("settings_token_create", args=[suite.slug]),
                                     {"name": "ci", "scope": "write"}, follow=True)
    assert response.status_code == 200
    made.append(response.context["new_token_raw"])  # the page drawn; the session let it go
    for raw in made:
        secret = raw[tokens.PREFIX_LENGTH:]
        for model in apps.get_models():
            for instance in model.objects.all():
                for text in _stored_text(instance):
                    assert secret not in text, f"{model._meta.label} holds a token in the clear"
        token = ApiToken.objects.get(prefix=raw[: tokens.PREFIX_LENGTH])
        assert token.digest == tokens._digest(raw) and len(token.digest) == 64


def test_tokens_are_compared_in_constant_time(suite, monkeypatch):
    raw = token_create(suite=suite, scope="read", actor="@lea")[1]
    compared = []
    real = tokens.hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(tokens.hmac, "compare_digest", spy)
    assert token_authenticate(raw) is not None
    assert token_authenticate(raw[:-1] + ("A" if raw[-1] != "A" else "B")) is None
    assert len(compared) == 2 and all(len(a) == len(b) == 64 for a, b in compared)


@pytest.mark.parametrize("raw", ["fbw_\x00abcdefghijklmnop", "fbr_abcdefgh\u00e9ijklmnop",
                                 "fbw_abcdefgh ijklmnop", "fbw_" + "a" * 400])
def test_a_token_of_the_wrong_shape_never_reaches_the_database(suite, raw,
                                                               django_assert_num_queries):
    with django_assert_num_queries(0):
        assert token_authenticate(raw) is None


# --- upload size limits on every path -------------------------------------------------

LIMIT = 4096


@pytest.fixture
def small_limit(settings):
    settings.UPLOAD_MAX_BYTES = LIMIT
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT
    return LIMIT


def _too_big_report() -> bytes:
    rows = [measurement(f"tests/test_{i:04}.py::test_ok") for i in range(200)]
    data = body(rows)
    assert len(data) > LIMIT
    return data


@pytest.mark.parametrize("endpoint", ["reports", "verdicts"])
def test_api_uploads_over_the_limit_get_413(suite, small_limit, endpoint):
    raw = token_create(suite=suite, scope="write", actor="@lea")[1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    response = client.post(f"/api/v1/suites/{suite.slug}/{endpoint}", data=_too_big_report(),
                           content_type="application/json")
    assert response.status_code == 413
    assert response.json()["error"] == "too_large"
    assert not suite.reports.exists() and not suite.batches.exists()


@pytest.mark.parametrize("command", ["ingest_report", "ingest_signals", "import_ledger"])
def test_commands_refuse_files_over_the_limit(suite, small_limit, tmp_path, command):
    path = tmp_path / "upload.json"
    path.write_bytes(_too_big_report())
    with pytest.raises(CommandError, match="over the upload limit"):
        call_command(command, suite.slug, str(path), stdout=StringIO(), stderr=StringIO())
    assert not suite.reports.exists() and not suite.batches.exists()
    assert not suite.entries.exists()


def test_form_posts_over_the_limit_are_refused(client_for, owner, suite, small_limit):
    response = client_for(owner).post(
        reverse("entry_new", args=[suite.slug]),
        {"node": "tests/test_a.py::t", "owner": "@finley", "evidence": "x" * (2 * LIMIT)},
    )
    assert response.status_code == 400
    assert not suite.entries.exists()


# --- hostile URLs and queries on pages ------------------------------------------------


def test_hostile_urls_and_queries_never_fail_the_pages(client_for, staff, suite, furnished):
    """A NUL byte, which PostgreSQL text cannot hold, or an over-long value in a path or a
    query: answered as a miss or an invalid filter, never with a server error."""
    client = client_for(staff)
    client.raise_request_exception = False
    slug = suite.slug
    hostile = ["a\x00b", "%00", "x" * 5000]
    failed = []
    for text in hostile:
        for url, query in [
            (node_page(slug, "tests/test_flaky.py::test_once") + "x", {}),
            (f"/suites/{slug}/nodes/{text}/", {}),
            (reverse("ledger", args=[slug]), {"q": text, "owner": text, "state": text}),
            (reverse("reports", args=[slug]), {"status": text, "page": text}),
            (reverse("batch", args=[slug, furnished["batch"].pk]),
             {"verdict": text, "reason": text}),
            (reverse("trends", args=[slug]), {"range": "custom", "start": text, "end": text}),
            (reverse("entry_new", args=[slug]), {"node": text, "evidence": text}),
            (reverse("admin:ledger_quarantineentry_changelist"), {"q": text}),
        ]:
            response = client.get(url, query)
            if response.status_code >= 500:
                failed.append((url, sorted(query), response.status_code))
    assert failed == []


@pytest.mark.slow
@pytest.mark.parametrize(("value", "disabled"), [(None, False), ("true", True), ("false", False)])
def test_server_side_cursors_can_be_turned_off_for_pgbouncer(tmp_path, value, disabled):
    """Behind PgBouncer in transaction mode a cursor may not outlive its transaction
    (docs/deployment.md, several hosts): DISABLE_SERVER_SIDE_CURSORS turns them off."""
    env = production_env(tmp_path)
    env["DATABASE_URL"] = "postgres://flakeboard@db.example.com/flakeboard"
    env.pop("DISABLE_SERVER_SIDE_CURSORS", None)
    if value is not None:
        env["DISABLE_SERVER_SIDE_CURSORS"] = value
    done = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; "
         "print(settings.DATABASES['default']['DISABLE_SERVER_SIDE_CURSORS'])"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(disabled)
