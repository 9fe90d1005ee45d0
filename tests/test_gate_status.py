"""Whether the gate passes now (rules.GateStatusNow): the rule, the status endpoint that
answers it to CI, and the overview's headline, which asks the same function."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from flakeboard import rules
from ledger.quarantine import quarantine_create
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest
from tests.api_http import assert_documented, new_token
from tests.helpers import body, measurement
from tests.properties import PROPERTY

Cause = rules.StatusCause


def status(expired=0, violations=0, quarantined=0, size=100, cap=0.05):
    return rules.GateStatusNow(expired, violations, rules.ShareFigures(quarantined, size, cap))


@pytest.mark.parametrize(
    ("now", "failing", "summary"),
    [
        (status(), [], "passing"),
        (status(quarantined=5), [], "passing"),  # 5 of 100 is at a cap of 0.05, not over
        (status(quarantined=6), [Cause.OVER_CAP], "failing: 1 entry over the share cap"),
        (status(quarantined=9, size=20, cap=0.3), [Cause.OVER_CAP],
         "failing: 3 entries over the share cap"),
        (status(expired=1), [Cause.EXPIRED], "failing: 1 expired entry"),
        (status(violations=2), [Cause.TIER_VIOLATION], "failing: 2 tier violations"),
        (status(expired=2, violations=1, quarantined=7),
         [Cause.EXPIRED, Cause.TIER_VIOLATION, Cause.OVER_CAP],
         "failing: 2 expired entries, 1 tier violation, 2 entries over the share cap"),
        (status(quarantined=1, size=0), [Cause.OVER_CAP], "failing: 1 entry over the share cap"),
    ],
)
def test_the_gate_fails_on_each_cause_and_passes_on_none(now, failing, summary):
    assert now.failing_causes == failing
    assert now.passing is (not failing)
    assert rules.status_summary(now) == summary


@PROPERTY
@given(expired=st.integers(0, 5), violations=st.integers(0, 5),
       quarantined=st.integers(0, 300), size=st.integers(0, 300),
       cap=st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.12, 0.3, 1 / 3, 0.5, 1.0]))
def test_passing_is_no_expired_no_violation_and_the_share_within_its_cap(
    expired, violations, quarantined, size, cap
):
    share = rules.ShareFigures(quarantined, size, cap)
    now = rules.GateStatusNow(expired, violations, share)
    assert now.passing is (expired == 0 and violations == 0 and not share.over_cap)
    # The entries over the cap are exactly those that must go for the share to fit it.
    excess = now.causes[Cause.OVER_CAP]
    assert (excess > 0) is share.over_cap
    assert not rules.share_over_cap(quarantined - excess, size, cap)
    if excess:
        assert rules.share_over_cap(quarantined - excess + 1, size, cap)


# --- the status endpoint and the headline, on a live suite ----------------------------

FLAKY = "tests/test_flaky.py::test_{}"


def forty_known(suite, *, cap: float):
    """The suite, knowing FLAKY's forty nodes (0 to 39), with ``cap`` for its share cap."""
    suite.max_quarantined_share = cap
    suite.save()
    report_ingest(suite=suite, body=body([measurement(FLAKY.format(i)) for i in range(40)]),
                  actor="ci")
    return suite


@pytest.fixture
def known(suite):
    """Forty known nodes and a cap with room for four entries."""
    return forty_known(suite, cap=0.1)


def quarantine(suite, i, today, days=10):
    return quarantine_create(suite=suite, nodeid=FLAKY.format(i), owner="@finley",
                             expires=today + timedelta(days=days), evidence="ci/run-7",
                             actor="@finley", today=today, imported=days < 0, n=200, fails=5)


def causes(answer) -> dict:
    return {c["cause"]: c["count"] for c in answer["causes"]}


def test_a_suite_with_live_entries_only_is_passing(board, known, today):
    quarantine(known, 1, today)
    answer = board.get(f"/api/v1/suites/{known.slug}/status", token=new_token(known, "read"))
    assert answer.status == 200
    assert_documented("get", "/api/v1/suites/{suite}/status", answer)
    data = answer.json
    assert (data["passing"], data["summary"]) == (True, "passing")
    assert causes(data) == {"expired": 0, "tier_violation": 0, "over_cap": 0}
    assert data["share"] == {"quarantined": 1, "test_set_size": 40, "share": 0.025, "cap": 0.1,
                             "over_cap": False, "headroom": 3, "size_source": "known_nodes",
                             "ci_run": None}
    assert data["url"] == board.url + reverse("overview", args=[known.slug])


def test_each_cause_is_counted_and_links_to_its_rows(board, known, today):
    quarantine(known, 1, today, days=-2)  # expired
    for i in range(2, 6):
        quarantine(known, i, today)
    tier_rule_add(suite=known, glob=FLAKY.format(5), tier=0, actor="@lea")  # one violates
    known.max_quarantined_share = 0.05  # room for two of forty; three are live
    known.save()
    data = board.get(f"/api/v1/suites/{known.slug}/status",
                     token=new_token(known, "read")).json
    assert data["passing"] is False
    assert causes(data) == {"expired": 1, "tier_violation": 1, "over_cap": 1}
    assert data["entries"] == {"active": 3, "expiring": 0, "expired": 1, "tier_violation": 1}
    assert data["summary"] == ("failing: 1 expired entry, 1 tier violation, "
                               "1 entry over the share cap")
    ledger = board.url + reverse("ledger", args=[known.slug])
    assert [c["url"] for c in data["causes"]] == [
        f"{ledger}?state=expired", f"{ledger}?state=tier_violation", ledger]


@pytest.mark.parametrize(("scope", "status_code"), [("read", 200), ("write", 200)])
def test_a_read_or_write_token_of_the_suite_may_ask(board, known, scope, status_code):
    answer = board.get(f"/api/v1/suites/{known.slug}/status", token=new_token(known, scope))
    assert answer.status == status_code


def test_another_suites_token_or_none_is_refused(board, known, other_suite):
    path = f"/api/v1/suites/{known.slug}/status"
    assert board.get(path).status == 401
    refused = board.get(path, token=new_token(other_suite, "read"))
    assert (refused.status, refused.json["error"]) == (403, "wrong_suite")


def test_the_overview_headline_says_what_the_endpoint_says(client_for, lead, known, today):
    page = client_for(lead).get(reverse("overview", args=[known.slug])).content.decode()
    assert "Gate passing" in page and "Gate failing" not in page
    quarantine(known, 1, today, days=-1)
    tier_rule_add(suite=known, glob=FLAKY.format(2), tier=1, actor="@lea")
    quarantine_create(suite=known, nodeid=FLAKY.format(3), owner="@finley",
                      expires=today + timedelta(days=5), evidence="ci/run-8", actor="@finley",
                      today=today, n=200, fails=5)
    tier_rule_add(suite=known, glob=FLAKY.format(3), tier=0, actor="@lea")
    page = client_for(lead).get(reverse("overview", args=[known.slug])).content.decode()
    assert "Gate failing" in page
    ledger = reverse("ledger", args=[known.slug])
    assert f'<a href="{ledger}?state=expired">1 expired entry</a>' in page
    assert f'<a href="{ledger}?state=tier_violation">1 tier violation</a>' in page
    assert "over the share cap" not in page
