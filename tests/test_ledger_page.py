"""The ledger page: open entries with state badges, filters, sorting, pagination over htmx,
and the share against the cap."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse

from ledger.models import QuarantineEntry
from ledger.quarantine import quarantine_clear, quarantine_create
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest
from tests.helpers import body, measurement
from tests.world import module_world

ACTIVE = "tests/test_pay.py::test_active"
EXPIRING = "tests/test_pay.py::test_expiring"
EXPIRED = "tests/test_pay.py::test_expired"
VIOLATION = "tests/test_contract.py::test_roundtrip"
CLEARED = "tests/test_pay.py::test_cleared"


def quarantine(suite, today, nodeid, *, days=20, owner="@finley", evidence="ci/run-1", **kw):
    return quarantine_create(
        suite=suite, nodeid=nodeid, owner=owner, expires=today + timedelta(days=days),
        evidence=evidence, actor=owner if owner.startswith("@") else "@lea", today=today, **kw,
    )


def add_entries(suite, today):
    suite.max_quarantined_share = 1.0
    suite.save()
    made = {
        "active": quarantine(suite, today, ACTIVE, evidence="https://ci.example.com/runs/1"),
        "expiring": quarantine(suite, today, EXPIRING, days=3, owner="@sam"),
        "expired": quarantine(suite, today, EXPIRED, days=-2, imported=True),
        "tier_violation": quarantine(suite, today, VIOLATION, days=10, owner="qa@example.com"),
        "cleared": quarantine(suite, today, CLEARED, days=9),
    }
    quarantine_clear(entry=made["cleared"], note="fixed", actor="@finley")
    tier_rule_add(suite=suite, glob="tests/test_contract.py::*", tier=1, actor="@lea")
    return made


# entries: one entry in each state.
build_world, entries = module_world("entries", add_entries)


def row_ids(response) -> list[int]:
    return [int(pk) for pk in re.findall(r'<tr id="entry-(\d+)"', response.content.decode())]


def ledger(client, suite, **params):
    return client.get(reverse("ledger", args=[suite.slug]), params)


def test_open_entries_with_their_state_badges(client_for, viewer, suite, entries):
    response = ledger(client_for(viewer), suite)
    html = response.content.decode()
    assert response.status_code == 200
    assert set(row_ids(response)) == {entries[s].pk for s in
                                      ("active", "expiring", "expired", "tier_violation")}
    for state, label in [("active", "Active"), ("expiring", "Expiring"), ("expired", "Expired"),
                         ("tier_violation", "Tier violation")]:
        assert f'<span class="badge st-{state}">{label}</span>' in html
    assert CLEARED not in html


def test_rows_are_sorted_by_expiry_both_ways(client_for, viewer, suite, entries):
    soonest = row_ids(ledger(client_for(viewer), suite))
    expected = [entries[s].pk for s in ("expired", "expiring", "tier_violation", "active")]
    assert soonest == expected
    assert row_ids(ledger(client_for(viewer), suite, sort="-expires")) == expected[::-1]


@pytest.mark.parametrize("state", ["active", "expiring", "expired", "tier_violation", "cleared"])
def test_filter_by_state(client_for, viewer, suite, entries, state):
    assert row_ids(ledger(client_for(viewer), suite, state=state)) == [entries[state].pk]


def test_filter_by_owner_text_and_mine(client_for, owner, suite, entries):
    client = client_for(owner)  # @finley
    assert row_ids(ledger(client, suite, owner="@sam")) == [entries["expiring"].pk]
    assert row_ids(ledger(client, suite, q="contract")) == [entries["tier_violation"].pk]
    assert row_ids(ledger(client, suite, q="ci.example.com")) == [entries["active"].pk]
    mine = row_ids(ledger(client, suite, mine="on"))
    assert mine == [entries["expired"].pk, entries["active"].pk]
    assert row_ids(ledger(client, suite, mine="on", q="active")) == [entries["active"].pk]


def test_the_owner_filter_offers_every_owner(client_for, viewer, suite, entries):
    html = ledger(client_for(viewer), suite).content.decode()
    for handle in ("@finley", "@sam", "qa@example.com"):
        assert f'<option value="{handle}">{handle}</option>' in html


def test_invalid_filters_are_ignored(client_for, viewer, suite, entries):
    response = ledger(client_for(viewer), suite, state="bogus", sort="pk", owner="@nobody")
    assert response.status_code == 200
    assert len(row_ids(response)) == 4


def test_no_match_explains_itself(client_for, viewer, suite, entries):
    html = ledger(client_for(viewer), suite, q="no such node").content.decode()
    assert "No entry matches these filters." in html


def test_empty_ledger_says_so(client_for, owner, suite):
    html = ledger(client_for(owner), suite).content.decode()
    assert "The ledger is empty" in html
    assert reverse("entry_new", args=[suite.slug]) in html


def test_filters_and_pagination_use_htmx_and_keep_their_hrefs(client_for, viewer, suite, today):
    suite.max_quarantined_share = 1.0
    suite.save()
    for i in range(30):
        quarantine(suite, today, f"tests/test_many.py::test_{i:02}", days=1 + i % 25)
    client = client_for(viewer)
    first = ledger(client, suite, q="test_many")
    html = first.content.decode()
    assert len(row_ids(first)) == 25
    assert 'hx-push-url="true"' in html
    assert f'hx-get="{reverse("ledger", args=[suite.slug])}"' in html
    next_link = re.search(r'<a href="(\?[^"]*)" hx-get="\1" hx-target="#results" '
                          r'hx-push-url="true" rel="next">', html)
    assert next_link is not None
    assert "q=test_many" in next_link.group(1) and "page=2" in next_link.group(1)
    second = client.get(reverse("ledger", args=[suite.slug]) + next_link.group(1).replace(
        "&amp;", "&"))
    assert len(row_ids(second)) == 5
    assert not set(row_ids(second)) & set(row_ids(first))


def test_htmx_gets_the_results_partial_and_plain_requests_the_page(
    client_for, viewer, suite, entries
):
    client = client_for(viewer)
    partial = client.get(reverse("ledger", args=[suite.slug]), {"state": "expired"},
                         headers={"HX-Request": "true"})
    assert partial.status_code == 200
    assert b"<html" not in partial.content and b'class="result-count"' in partial.content
    assert row_ids(partial) == [entries["expired"].pk]
    assert "HX-Request" in partial["Vary"]
    full = ledger(client, suite, state="expired")
    assert b"<html" in full.content and b'id="results"' in full.content
    restore = client.get(reverse("ledger", args=[suite.slug]), {"state": "expired"},
                         headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})
    assert b"<html" in restore.content


def test_share_against_the_cap_and_headroom(client_for, viewer, suite, today):
    report_ingest(suite=suite, body=body([measurement(f"t.py::t{i}") for i in range(40)]),
                  actor="ci")
    quarantine(suite, today, "t.py::t0")
    html = ledger(client_for(viewer), suite).content.decode()
    assert "2.5%" in html and "1 of 40 known nodes" in html
    assert "Cap 5%" in html and "room for 1 more entry" in html
    assert "<meter" in html


def test_owners_get_actions_and_viewers_do_not(client_for, owner, viewer, suite, entries):
    renew = reverse("entry_renew", args=[suite.slug, entries["active"].pk])
    clear_violation = reverse("entry_clear", args=[suite.slug, entries["tier_violation"].pk])
    renew_violation = reverse("entry_renew", args=[suite.slug, entries["tier_violation"].pk])
    html = ledger(client_for(owner), suite).content.decode()
    assert f'href="{renew}"' in html and f'href="{clear_violation}"' in html
    assert renew_violation not in html  # a tier violation cannot be renewed
    assert reverse("entry_new", args=[suite.slug]) in html
    html = ledger(client_for(viewer), suite).content.decode()
    assert renew not in html and reverse("entry_new", args=[suite.slug]) not in html


@pytest.mark.parametrize("size", [3, 40])
def test_the_ledger_page_makes_a_bounded_number_of_queries(
    client_for, viewer, suite, today, size, django_assert_max_num_queries
):
    suite.max_quarantined_share = 1.0
    suite.save()
    for i in range(size):
        quarantine(suite, today, f"tests/test_many.py::test_{i:02}", days=1 + i % 25,
                   owner=f"@owner{i % 7}")
    client = client_for(viewer)
    with django_assert_max_num_queries(12):
        response = ledger(client, suite)
    assert len(row_ids(response)) == min(size, 25)
    with django_assert_max_num_queries(12):
        ledger(client, suite, state="expiring", q="test", mine="on", page="2")
    assert QuarantineEntry.objects.count() == size
