"""The tests' clock (tests/clock.py): frozen in each test, moved on purpose, and started
at a given UTC time for a whole run by FLAKEBOARD_TEST_CLOCK."""

import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from tests.clock import FAKETIME_LIBRARIES, session_start


def test_the_clock_stands_still_in_a_test_until_the_test_moves_it(clock):
    first = timezone.now()
    time.sleep(0.02)
    assert timezone.now() == first and time.time() == first.timestamp()
    clock.shift(timedelta(days=1))
    assert timezone.now() - first == timedelta(days=1)
    assert timezone.now().date() == first.date() + timedelta(days=1)


NOW = datetime(2026, 12, 4, 13, 5, 7, tzinfo=UTC)


@pytest.mark.parametrize(("value", "start"), [
    ("23:59:50", datetime(2026, 12, 4, 23, 59, 50, tzinfo=UTC)),
    ("00:00", datetime(2026, 12, 4, 0, 0, tzinfo=UTC)),
    ("2026-12-31T23:59:50Z", datetime(2026, 12, 31, 23, 59, 50, tzinfo=UTC)),
    ("2027-02-28T23:59:59", datetime(2027, 2, 28, 23, 59, 59, tzinfo=UTC)),
    ("2026-12-05T01:00:00+02:00", datetime(2026, 12, 4, 23, 0, tzinfo=UTC)),
])
def test_the_session_clock_is_a_utc_time_of_today_or_an_instant(value, start):
    assert session_start(value, NOW) == start


def test_a_session_clock_that_names_no_time_is_refused():
    with pytest.raises(pytest.UsageError, match="neither a UTC time"):
        session_start("midnight", NOW)


@pytest.mark.slow  # it starts pytest, which sleeps past midnight
@pytest.mark.skipif(not sorted(Path("/").glob(FAKETIME_LIBRARIES.lstrip("/"))),
                    reason="libfaketime is not installed (apt-get install faketime)")
def test_a_run_with_the_session_clock_crosses_midnight(tmp_path):
    """A run started at 23:59:57 collects on one day and, once its clock has ticked past
    midnight, runs its tests on the next: each test on one frozen date. A process a test
    starts with ``PROCESS_CLOCK`` reads the session's clock (to the second, not hours off)."""
    (tmp_path / "conftest.py").write_text(
        "from tests.clock import clock, pytest_configure, pytest_unconfigure  # noqa\n")
    (tmp_path / "test_midnight.py").write_text(
        "import time\nfrom datetime import date, timedelta\n"
        "COLLECTED = date.today()\n"
        "def test_after_midnight():\n"
        "    time.sleep(3.1)\n"
        "def test_the_next_day(clock):\n"
        "    assert date.today() == COLLECTED + timedelta(days=1)\n"
        "    time.sleep(0.1)\n"
        "    assert date.today() == COLLECTED + timedelta(days=1)\n"
        "def test_a_process_shares_the_clock():\n"
        "    import subprocess, sys\n"
        "    from tests.clock import PROCESS_CLOCK\n"
        "    child = subprocess.run([sys.executable, '-c', 'import time; print(time.time())'],\n"
        "                           env=PROCESS_CLOCK, capture_output=True, text=True)\n"
        "    assert abs(float(child.stdout) - time.time()) < 2\n")
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True, text=True, check=False, cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": root, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
             "FLAKEBOARD_TEST_CLOCK": "23:59:57"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
