"""EMAIL_URL (issue 20): one URL names the board's mailer; a URL that cannot work is
refused at start-up, saying why, and never echoes the password."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from flakeboard.email_url import SMTP_TIMEOUT_SECONDS, mailer
from tests.test_hardening import production_env

ROOT = Path(__file__).resolve().parent.parent
SMTP = "django.core.mail.backends.smtp.EmailBackend"


def smtp(host, port, *, username="", password="", use_tls=False, use_ssl=False,
         timeout=SMTP_TIMEOUT_SECONDS):
    return {"BACKEND": SMTP, "OPTIONS": {
        "host": host, "port": port, "username": username, "password": password,
        "use_tls": use_tls, "use_ssl": use_ssl, "timeout": timeout}}


@pytest.mark.parametrize(("url", "expected"), [
    ("smtp://user:pass@mail.example.com:587?tls=1",
     smtp("mail.example.com", 587, username="user", password="pass", use_tls=True)),
    ("smtp://mail.example.com:25", smtp("mail.example.com", 25)),
    ("smtp://mail.example.com", smtp("mail.example.com", 25)),
    ("smtp://mail.example.com?tls=true", smtp("mail.example.com", 587, use_tls=True)),
    ("smtp://mail.example.com?ssl=1", smtp("mail.example.com", 465, use_ssl=True)),
    ("smtps://mail.example.com", smtp("mail.example.com", 465, use_ssl=True)),
    ("smtp://mail.example.com:2525?tls=0&timeout=30", smtp("mail.example.com", 2525,
                                                          timeout=30)),
    # A user name or password with reserved characters is percent-encoded in the URL.
    ("smtp://board%40example.com:p%40ss%3Aw0rd@mail.example.com:587?tls=1",
     smtp("mail.example.com", 587, username="board@example.com", password="p@ss:w0rd",
          use_tls=True)),
    ("console:", {"BACKEND": "django.core.mail.backends.console.EmailBackend"}),
    ("locmem:", {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}),
    ("dummy:", {"BACKEND": "django.core.mail.backends.dummy.EmailBackend"}),
    ("file:///var/spool/flakeboard", {"BACKEND": "django.core.mail.backends.filebased."
                                      "EmailBackend",
                                      "OPTIONS": {"file_path": "/var/spool/flakeboard"}}),
])
def test_each_url_names_its_mailer(url, expected):
    assert mailer(url) == expected


@pytest.mark.parametrize(("url", "why"), [
    ("smtp://", "names no host"),
    ("smtp://:secret@:587", "names no host"),
    ("smtp://mail.example.com:99999", "port that is not a number"),
    ("smtp://mail.example.com:port", "port that is not a number"),
    ("smtp://mail.example.com?tls=1&ssl=1", "both tls (STARTTLS) and ssl"),
    ("smtps://mail.example.com?tls=1", "both tls (STARTTLS) and ssl"),
    ("smtp://mail.example.com?tls=maybe", "tls=maybe; use tls=1 or tls=0"),
    ("smtp://mail.example.com?timeout=0", "timeout that is not a whole number"),
    ("smtp://mail.example.com?starttls=1", "unknown option starttls"),
    ("file://relative/dir", "needs an absolute path"),
    ("file:", "needs an absolute path"),
    ("sendmail:", "unknown scheme"),
    ("mail.example.com", "unknown scheme"),
    ("", "unknown scheme"),
])
def test_a_url_that_cannot_work_is_refused_saying_why(url, why):
    with pytest.raises(ImproperlyConfigured, match="EMAIL_URL") as refused:
        mailer(url)
    assert why in str(refused.value)
    assert "smtp://user:pass@host:587?tls=1" in str(refused.value)  # an example to follow


def test_a_refusal_never_shows_the_password():
    with pytest.raises(ImproperlyConfigured) as refused:
        mailer("smtp://board:hunter2@mail.example.com:70000")
    assert "hunter2" not in str(refused.value)
    assert "mail.example.com:70000" in str(refused.value)


def settings_in(**env) -> subprocess.CompletedProcess:
    """The settings module read in a fresh interpreter, with ``env`` (None: unset)."""
    environment = {k: v for k, v in os.environ.items()
                   if k not in {"EMAIL_URL", "BASE_URL", "DEFAULT_FROM_EMAIL"}}
    environment.update(env)
    code = ("from flakeboard import settings as s; "
            "print(s.MAILERS['default']['BACKEND'], s.BASE_URL, s.DEFAULT_FROM_EMAIL)")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_the_default_mailer_prints_to_the_console():
    answer = settings_in()
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.split(" ", 2) == [
        "django.core.mail.backends.console.EmailBackend", "http://127.0.0.1:8000",
        "Flakeboard <flakeboard@localhost>\n"]


@pytest.mark.slow
def test_a_bad_email_url_or_base_url_stops_the_board_at_start_up():
    assert "EMAIL_URL “…sendmail:” has an unknown scheme" in settings_in(
        EMAIL_URL="sendmail:").stderr
    assert "BASE_URL is the board's public address" in settings_in(
        BASE_URL="board.example").stderr


@pytest.mark.slow
@pytest.mark.parametrize(("email_url", "flagged"), [
    (None, False),  # mail is optional: unset, the deployment check says nothing of it
    ("smtp://mail.example.com:587?tls=1", False),
    ("console:", True),  # named on purpose in production: Django's check flags it
])
def test_the_deployment_check_flags_a_development_mailer_named_in_production(
    tmp_path, email_url, flagged
):
    env = production_env(tmp_path)
    env.pop("EMAIL_URL", None)
    if email_url:
        env["EMAIL_URL"] = email_url
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert ("mail.E001" in done.stderr) is flagged
    assert (done.returncode != 0) is flagged, done.stderr
