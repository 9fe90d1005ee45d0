"""SPEC 4: quarantine entry states and the bounds a ledger entry must meet.

An entry is active, expiring (within EXPIRING_WITHIN_DAYS of expiry), expired, cleared or a
tier violation; only live entries count towards the quarantined share. An entry's expiry must
be after today and at most max_quarantine_days ahead, and its owner, evidence and node id
must be well formed. The budget gate itself is in test_rules_budget_gate.py (and its report level in
test_rules_report_gate.py).
"""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules import (
    EXPIRING_WITHIN_DAYS,
    NODEID_MAX_LENGTH,
    EntryFacts,
    EntryState,
    ExpiryProblem,
    entry_is_live,
    entry_state,
    evidence_is_link,
    evidence_problem,
    expiry_bounds,
    expiry_problem,
    nodeid_problem,
    owner_problem,
    renewal_revives,
)
from tests.helpers import (
    ACTIVE,
    EXPIRED,
    LAST_DAY,
    LONG_AGO,
    NEXT_MONTH,
    NEXT_WEEK,
    TODAY,
    VIOLATING,
    YESTERDAY,
    named,
)
from tests.properties import PROPERTY
from tests.test_rules_budget_gate import VIOLATING_EXPIRED

# --- entry states (SPEC 4) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("expires", "cleared", "violation", "state"),
    [
        pytest.param(TODAY + timedelta(days=30), False, False, "active", id="in-30-days"),
        pytest.param(TODAY + timedelta(days=8), False, False, "active", id="in-8-days"),
        pytest.param(TODAY + timedelta(days=7), False, False, "expiring", id="in-7-days"),
        pytest.param(TODAY + timedelta(days=1), False, False, "expiring", id="tomorrow"),
        pytest.param(TODAY, False, False, "expiring", id="today"),
        pytest.param(YESTERDAY, False, False, "expired", id="yesterday"),
        pytest.param(LONG_AGO, False, False, "expired", id="long-ago"),
        pytest.param(NEXT_MONTH, True, False, "cleared", id="cleared-active"),
        pytest.param(YESTERDAY, True, False, "cleared", id="cleared-expired"),
        pytest.param(NEXT_MONTH, False, True, "tier_violation", id="violation-active"),
        pytest.param(NEXT_WEEK, False, True, "tier_violation", id="violation-expiring"),
        pytest.param(YESTERDAY, False, True, "tier_violation", id="violation-expired"),
        pytest.param(YESTERDAY, True, True, "cleared", id="cleared-violation"),
    ],
)
def test_entry_state(expires: date, cleared: bool, violation: bool, state: str) -> None:
    assert EXPIRING_WITHIN_DAYS == 7
    got = entry_state(expires=expires, today=TODAY, cleared=cleared, tier_violation=violation)
    assert got is EntryState(state)


@pytest.mark.parametrize(
    ("facts", "counts", "revives"),
    [
        pytest.param(ACTIVE, True, False, id="active"),
        pytest.param(LAST_DAY, True, False, id="expires-today"),
        pytest.param(EXPIRED, False, True, id="expired"),
        pytest.param(VIOLATING, False, False, id="violating"),
        pytest.param(VIOLATING_EXPIRED, False, False, id="violating-expired"),
    ],
)
def test_which_entries_count_towards_the_share_and_which_renewals_bring_them_back(
        facts: EntryFacts, counts: bool, revives: bool) -> None:
    assert entry_is_live(facts, TODAY) is counts
    assert renewal_revives(facts, TODAY) is revives


@PROPERTY
@given(st.integers(-400, 400), st.integers(1, 365), st.booleans())
def test_a_renewal_revives_exactly_when_it_adds_the_entry_to_the_share(
        expires_in: int, renewed_for: int, violation: bool) -> None:
    """Whatever the entry's expiry, a renewal within the bounds leaves it live unless it is
    a tier violation: it adds to the share exactly when the entry was not live before."""
    before = EntryFacts(TODAY + timedelta(days=expires_in), violation)
    after = EntryFacts(TODAY + timedelta(days=renewed_for), violation)
    added = entry_is_live(after, TODAY) and not entry_is_live(before, TODAY)
    assert renewal_revives(before, TODAY) is added


# --- quarantine bounds (SPEC 4) ----------------------------------------------------------


@pytest.mark.parametrize(
    ("days_ahead", "max_days", "ok"),
    [
        pytest.param(-30, 30, False, id="last-month"),
        pytest.param(-1, 30, False, id="yesterday"),
        pytest.param(0, 30, False, id="today"),
        pytest.param(1, 30, True, id="tomorrow"),
        pytest.param(15, 30, True, id="in-15-days"),
        pytest.param(30, 30, True, id="at-max"),
        pytest.param(31, 30, False, id="one-past-max"),
        pytest.param(365, 30, False, id="next-year"),
        pytest.param(7, 7, True, id="max-7-at-max"),
        pytest.param(8, 7, False, id="max-7-past-max"),
        pytest.param(1, 1, True, id="max-1-tomorrow"),
        pytest.param(2, 1, False, id="max-1-day-after"),
    ],
)
def test_expiry_bounds_table(days_ahead: int, max_days: int, ok: bool) -> None:
    problem = expiry_problem(TODAY + timedelta(days=days_ahead), TODAY, max_days)
    assert (problem is None) is ok


def test_expiry_bounds() -> None:
    assert expiry_bounds(TODAY, 30) == (date(2026, 3, 16), date(2026, 4, 14))


def test_an_expiry_is_too_early_or_too_far() -> None:
    assert expiry_problem(TODAY, TODAY, 30) is ExpiryProblem.NOT_AFTER_TODAY
    assert expiry_problem(date(2026, 4, 15), TODAY, 30) is ExpiryProblem.TOO_FAR


@pytest.mark.parametrize(("owner", "ok"), [
    *named(True, {
        "handle": "@finley", "one-letter-handle": "@f", "handle-punctuation": "@finley-b.c_d",
        "team-handle": "@org/team-infra", "email": "finley@example.com",
        "email-plus-subdomain": "first.last+ci@mail.example.org",
    }),
    *named(False, {
        "empty": "", "spaces-only": "   ", "tab-only": "\t", "plain-word": "finley",
        "plain-words": "Finley Baker", "handle-with-space": "@fin ley",
        "leading-space": " @finley", "trailing-space": "@finley ",
        "handle-trailing-newline": "@finley\n", "email-trailing-newline": "finley@example.com\n",
        "email-with-nul": "fin\x00ley@example.com", "bare-at": "@",
        "handle-starting-with-dash": "@-finley", "email-without-domain": "finley@",
        "email-with-space": "fin ley@example.com", "email-in-brackets": "<finley@example.com>",
        "email-with-c1-control": "fin\x80ley@example.com", "email-over-254": "x" * 250 + "@a.io",
    }),
])
def test_owner_problem(owner: str, ok: bool) -> None:
    assert (owner_problem(owner) is None) is ok


@pytest.mark.parametrize(("evidence", "ok"), [
    *named(True, {
        "ci-run": "ci/run-88213", "https-url": "https://ci.example.com/runs/88213",
        "http-url": "http://ci.local/88213", "2000-chars": "x" * 2000,
    }),
    *named(False, {
        "empty": "", "spaces-only": "   ", "2001-chars": "x" * 2001,
        "line-break": "ci/run-1\nci/run-2", "tab": "ci/run\t1", "nul": "ci/run-1\x00",
    }),
])
def test_evidence_problem(evidence: str, ok: bool) -> None:
    assert (evidence_problem(evidence) is None) is ok


@pytest.mark.parametrize(("evidence", "link"), [
    *named(True, {"https": "https://ci.example.com/runs/1",
                  "http-upper": "HTTP://CI.EXAMPLE.COM/1"}),
    *named(False, {"ci-run": "ci/run-88213", "javascript": "javascript:alert(1)",
                   "ftp": "ftp://example.com/x"}),
])
def test_evidence_is_link(evidence: str, link: bool) -> None:
    assert evidence_is_link(evidence) is link


@pytest.mark.parametrize(("nodeid", "ok"), [
    *named(True, {
        "pytest-node": "tests/test_ingest.py::test_stream_backpressure",
        "class-param-unicode-space": "tests/t.py::TestA::test_b[ü-1 2]",
        "1000-chars": "x" * NODEID_MAX_LENGTH, "spaces-are-part-of-a-node-id": "   ",
    }),
    *named(False, {
        "empty": "", "1001-chars": "x" * (NODEID_MAX_LENGTH + 1),
        "nul": "tests/t.py::test_a\x00", "newline": "tests/t.py::test_a\nb",
        "tab": "tests/t.py::test_a\tb", "carriage-return": "tests/t.py::test_a\rb",
        "escape": "tests/t.py::test_a\x1b[31m", "del": "tests/t.py::test_a\x7f",
        "c1-next-line": "tests/t.py::test_a\x85", "lone-surrogate": "tests/t.py::test_\ud800",
        "not-a-string": 42, "none": None,
    }),
])
def test_nodeid_problem(nodeid: object, ok: bool) -> None:
    assert NODEID_MAX_LENGTH == 1000
    assert (nodeid_problem(nodeid) is None) is ok
