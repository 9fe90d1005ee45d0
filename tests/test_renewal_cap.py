"""SPEC 4: renewing an expired entry puts it back into the quarantined share, so it is
refused, as a create is, when that goes over the cap, naming the cap and the figure. A
bulk renewal that would do so is refused whole: nothing is renewed. Renewing a live entry
changes no share and is never refused for it.

The board: 60 known nodes and a 5% cap (3 entries fit), two live entries and three
expired ones, so there is room for one more."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.urls import reverse
from django.utils import timezone

from ledger.bulk_actions import BulkAction, bulk_apply
from ledger.models import AuditEvent, QuarantineEntry, Suite
from ledger.quarantine import quarantine_create, quarantine_renew
from ledger.selectors import share_figures
from tests.helpers import make_known, measurement
from tests.world import make_person, make_suite

LIVE = ["tests/test_pay.py::test_refund", "tests/test_pay.py::test_retry"]
EXPIRED = ["tests/test_cart.py::test_total", "tests/test_cart.py::test_tax",
           "tests/test_feed.py::test_order"]
HTMX = {"HX-Request": "true"}


def entries_near_the_cap(suite, today) -> dict:
    """The live and the expired entries, by node id."""
    make_known(suite, *(measurement(node, fails=8) for node in LIVE + EXPIRED), steady=55)
    Suite.objects.filter(pk=suite.pk).update(max_quarantined_share=0.05)
    entries = {}
    for i, node in enumerate(EXPIRED + LIVE):
        entries[node] = quarantine_create(
            suite=suite, nodeid=node, owner="@finley", evidence=f"ci/run-{100 + i}", n=200,
            fails=8, expires=today + timedelta(days=10), actor="@finley", today=today)
        if node in EXPIRED:  # expired since: it left the share, and its gate fails
            QuarantineEntry.objects.filter(pk=entries[node].pk).update(
                expires=today - timedelta(days=3))
    figures = share_figures(suite, today)
    assert (figures.quarantined, figures.size, figures.headroom) == (2, 60, 1)
    return {node: QuarantineEntry.objects.get(pk=entry.pk) for node, entry in entries.items()}


def build_world() -> SimpleNamespace:
    """This module's shared world (tests/world.py): the board above and the suite's owner,
    built once for a run of the tests that ask for it."""
    suite, today = make_suite("suite"), timezone.now().date()
    return SimpleNamespace(suite=suite, today=today,
                           users={"owner": make_person("owner", {"suite": suite})},
                           entries=entries_near_the_cap(suite, today))


@pytest.fixture
def board(world) -> dict:
    """The live and the expired entries, by node id (this test's copies)."""
    return world.entries


def renew(entry, today, **overrides):
    return quarantine_renew(**{
        "entry": entry, "expires": today + timedelta(days=20), "evidence": "ci/run-900",
        "actor": "@finley", "today": today, **overrides})


def renew_all(suite, today, entries, **overrides):
    return bulk_apply(**{
        "suite": suite, "entry_ids": [entry.pk for entry in entries],
        "action": BulkAction.RENEW, "note": "Still flaky.", "actor": "@finley", "today": today,
        "expires": today + timedelta(days=20), "evidence": "ci/run-900", **overrides})


def kept(entries) -> list[tuple]:
    return [QuarantineEntry.objects.filter(pk=entry.pk).values_list(
        "expires", "evidence", "renewals", "updated_at").get() for entry in entries]


def renewals_recorded() -> int:
    return AuditEvent.objects.filter(action=AuditEvent.Action.RENEW).count()


def assert_refused(error, message: str) -> None:
    """A refusal for the cap, naming the cap and the figure."""
    assert (error.code, error.messages) == ("cap_exceeded", [message])


def assert_unchanged(suite, today, board, before, *, renewals: int, quarantined: int) -> None:
    """Nothing renewed by the refused call: every entry as ``before``, no renewal recorded
    but the ``renewals`` before it, the share's ``quarantined`` count unchanged."""
    assert kept(board.values()) == before
    assert renewals_recorded() == renewals
    assert share_figures(suite, today).quarantined == quarantined


# --- one entry ---------------------------------------------------------------------------


def test_renewing_an_expired_entry_that_fits_puts_it_back_in_the_share(suite, today, board):
    renew(board[EXPIRED[0]], today)
    assert share_figures(suite, today).quarantined == 3  # 5.0% of 60: at the cap, not over


def test_renewing_an_expired_entry_over_the_cap_is_refused_naming_cap_and_figure(
        suite, today, board):
    renew(board[EXPIRED[0]], today)
    before = kept(board.values())
    with pytest.raises(ValidationError) as refused:
        renew(board[EXPIRED[1]], today)
    [error] = refused.value.error_dict[NON_FIELD_ERRORS]
    assert_refused(error, "Renewing this expired entry would put 4 of 60 known nodes in "
                   "quarantine (6.7%), over the suite's cap of 5.0%.")
    assert_unchanged(suite, today, board, before, renewals=1, quarantined=3)


@pytest.mark.parametrize("cap", [0.05, 0.01])
def test_renewing_a_live_entry_at_or_over_the_cap_is_allowed(suite, today, board, cap):
    renew(board[EXPIRED[0]], today)  # 3 of 60: at the cap
    Suite.objects.filter(pk=suite.pk).update(max_quarantined_share=cap)  # or over it
    renewed = renew(board[LIVE[0]], today)
    assert renewed.renewals == 1 and renewed.expires == today + timedelta(days=20)
    assert share_figures(suite, today).quarantined == 3


def test_an_entry_expiring_today_is_live_and_renews_at_the_cap(suite, today, board):
    renew(board[EXPIRED[0]], today)
    QuarantineEntry.objects.filter(pk=board[LIVE[0]].pk).update(expires=today)
    assert renew(board[LIVE[0]], today).renewals == 1


def test_the_cap_refusal_comes_with_the_entrys_other_refusals(suite, today, board):
    renew(board[EXPIRED[0]], today)
    with pytest.raises(ValidationError) as refused:
        renew(board[EXPIRED[1]], today, evidence=board[EXPIRED[1]].evidence)
    codes = {field: [e.code for e in errors]
             for field, errors in refused.value.error_dict.items()}
    assert codes == {"evidence": ["evidence_unchanged"], NON_FIELD_ERRORS: ["cap_exceeded"]}


# --- the entry page ----------------------------------------------------------------------


def test_the_entry_page_says_the_cap_and_the_figure(client_for, owner, suite, today, board):
    renew(board[EXPIRED[0]], today)
    entry = board[EXPIRED[1]]
    response = client_for(owner).post(
        reverse("entry_renew", args=[suite.slug, entry.pk]),
        {"expires": (today + timedelta(days=20)).isoformat(), "evidence": "ci/run-901",
         "place": "entry"}, headers=HTMX)
    html = response.content.decode()
    assert ("Renewing this expired entry would put 4 of 60 known nodes in quarantine "
            "(6.7%), over the suite&#x27;s cap of 5.0%.") in html
    assert QuarantineEntry.objects.get(pk=entry.pk).renewals == 0
    assert renewals_recorded() == 1


# --- many entries at once ----------------------------------------------------------------


def test_a_bulk_renewal_over_the_cap_is_refused_whole(suite, today, board):
    selected = [board[node] for node in EXPIRED]
    before = kept(board.values())
    with pytest.raises(ValidationError) as refused:
        renew_all(suite, today, selected)
    [error] = refused.value.error_list
    assert_refused(error, "Renewing the 3 expired entries selected would put 5 of 60 known "
                   "nodes in quarantine (8.3%), over the suite's cap of 5.0%. Nothing was "
                   "renewed.")
    assert_unchanged(suite, today, board, before, renewals=0, quarantined=2)


def test_a_bulk_renewal_that_fits_renews_every_entry(suite, today, board):
    selected = [board[EXPIRED[0]], *(board[node] for node in LIVE)]
    outcomes = renew_all(suite, today, selected)
    assert [outcome.done for outcome in outcomes] == [True, True, True]
    assert renewals_recorded() == 3
    assert share_figures(suite, today).quarantined == 3


def test_a_bulk_renewal_of_live_entries_at_the_cap_is_allowed(suite, today, board):
    renew(board[EXPIRED[0]], today)
    outcomes = renew_all(suite, today, [board[node] for node in LIVE], evidence="ci/run-901")
    assert all(outcome.done for outcome in outcomes)


def test_an_entry_refused_for_its_own_reason_is_not_counted_back_in(suite, today, board):
    """Two expired entries and room for one: the second's evidence is unchanged, so only
    the first comes back, and it fits. The second's refusal says the cap too: new
    evidence alone would not renew it."""
    selected = [board[EXPIRED[0]], board[EXPIRED[1]]]
    outcomes = renew_all(suite, today, selected, evidence=board[EXPIRED[1]].evidence)
    assert [outcome.done for outcome in outcomes] == [True, False]
    assert [code for _, code in outcomes[1].refusals] == ["evidence_unchanged", "cap_exceeded"]
    assert share_figures(suite, today).quarantined == 3
    assert renewals_recorded() == 1


def test_the_ledger_page_says_the_bulk_refusal(client_for, owner, suite, today, board):
    response = client_for(owner).post(reverse("ledger_bulk", args=[suite.slug]), {
        "action": "renew", "entry": [board[node].pk for node in EXPIRED],
        "note": "Still flaky.", "expires": (today + timedelta(days=20)).isoformat(),
        "evidence": "ci/run-900"}, follow=True)
    said = [(m.level_tag, m.message) for m in response.context["messages"]]
    assert said == [("error", "Renewing the 3 expired entries selected would put 5 of 60 "
                              "known nodes in quarantine (8.3%), over the suite's cap of "
                              "5.0%. Nothing was renewed.")]
    assert renewals_recorded() == 0
