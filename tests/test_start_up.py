"""A setting that cannot work stops the board at start-up, in one line that says why: the
commands (``manage.py``) and the server (gunicorn with ``flakeboard.gunicorn``) alike. A
default policy number outside the range a suite's own may take is refused so too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flakeboard.rules import POLICY_BOUNDS

ROOT = Path(__file__).resolve().parent.parent


def board_env(tmp_path, **overrides) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DJANGO", "DEFAULT_", "SECRET_KEY", "EMAIL_URL", "DEBUG"))}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'start.sqlite3'}", PYTHONPATH=str(ROOT))
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def manage_check(tmp_path, **overrides) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT,
                          env=board_env(tmp_path, **overrides), capture_output=True,
                          text=True, timeout=120)


def said_in_one_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize(("overrides", "said"), [
    ({"EMAIL_URL": "smtp://"}, "EMAIL_URL “…smtp://” names no host"),
    ({"DEBUG": "false", "SECRET_KEY": None},
     "SECRET_KEY (or SECRET_KEY_FILE) must be set when DEBUG is off."),
    ({"DEFAULT_NEW_TEST_RUNS": "2"}, "DEFAULT_NEW_TEST_RUNS is 2: it must be from 3 to 1000"),
    ({"DEFAULT_CLEAR_AFTER_CLEAN_MEASUREMENTS": "21"},
     "DEFAULT_CLEAR_AFTER_CLEAN_MEASUREMENTS is 21: it must be from 1 to 20"),
    ({"DEFAULT_MIN_RUNS": "many"}, "DEFAULT_MIN_RUNS is “many”: it must be a whole number"),
    ({"READ_DATABASE_URL": "sqlite:///replica.sqlite3"},
     "READ_DATABASE_URL names a PostgreSQL replica of a PostgreSQL DATABASE_URL."),
], ids=["email-url-without-host", "no-secret-key", "new-test-runs-below-3",
        "clear-after-above-20", "not-a-number", "replica-not-postgresql"])
def test_a_setting_that_cannot_work_stops_the_commands_in_one_line(tmp_path, overrides, said):
    line = said_in_one_line(manage_check(tmp_path, **overrides))
    assert said in line


@pytest.mark.slow
@pytest.mark.parametrize(("name", "variable"), [
    ("new_test_runs", "DEFAULT_NEW_TEST_RUNS"),
    ("measure_budget", "DEFAULT_MEASURE_BUDGET"),
    ("clear_after_clean_measurements", "DEFAULT_CLEAR_AFTER_CLEAN_MEASUREMENTS"),
])
def test_a_default_policy_number_at_either_end_of_its_range_is_taken(tmp_path, name,
                                                                     variable):
    for value in POLICY_BOUNDS[name]:
        done = manage_check(tmp_path, **{variable: str(value)})
        assert done.returncode == 0, done.stderr


def test_the_ranges_the_configuration_gives_are_the_rules_own():
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for name, (low, high) in POLICY_BOUNDS.items():
        variable = f"DEFAULT_{name.upper()}"
        row = next(line for line in text.splitlines() if line.startswith(f"| `{variable}`"))
        assert f"{low} to {high})" in row, row


@pytest.mark.slow
def test_the_server_stops_in_one_line_too(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "gunicorn", "-c", "python:flakeboard.gunicorn",
         "flakeboard.wsgi", "--bind", "127.0.0.1:0", "--workers", "1"],
        cwd=ROOT, env=board_env(tmp_path, EMAIL_URL="smtp://"), capture_output=True,
        text=True, timeout=120,
    )
    assert "EMAIL_URL “…smtp://” names no host" in said_in_one_line(done)


def test_a_suites_own_numbers_keep_to_the_same_ranges():
    from ledger.models import Suite

    for name, bound in POLICY_BOUNDS.items():
        limits = [v.limit_value for v in Suite._meta.get_field(name).validators
                  if hasattr(v, "limit_value")]
        assert limits == list(bound), name
