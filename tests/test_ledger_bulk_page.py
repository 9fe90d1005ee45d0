"""The ledger page's bulk bar: an owner selects rows (each box named after its node, or
every row of the page at once), renews or clears them with one reason, and is sent back to
the ledger as it was filtered, with the count done and each refused row and why. A viewer
sees no box and is refused the post."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse

from ledger.models import AuditEvent, QuarantineEntry
from ledger.quarantine import quarantine_clear
from tests.helpers import quarantined
from tests.world import module_world

NODES = {
    "tests/test_pay.py::test_refund": 5,
    "tests/test_cart.py::test_total": 9,
    "tests/test_feed.py::test_order": 12,
}


def add_entries(suite, today):
    return list(quarantined(suite, today, NODES).values())


build_world, entries = module_world("entries", add_entries)


def bulk_url(suite):
    return reverse("ledger_bulk", args=[suite.slug])


def renewal(today, *entries, **extra):
    return {"action": "renew", "entry": [e.pk for e in entries], "note": "Still flaky.",
            "expires": (today + timedelta(days=20)).isoformat(), "evidence": "ci/run-777",
            **extra}


def said(response) -> list[tuple[str, str]]:
    """The messages of the page a redirect leads to: (level, text)."""
    return [(m.level_tag, m.message) for m in response.context["messages"]]


def test_an_owner_renews_the_selected_rows_and_sees_the_count(
        client_for, owner, suite, entries, today):
    response = client_for(owner).post(bulk_url(suite), renewal(today, *entries[:2]),
                                      follow=True)
    assert response.redirect_chain == [(reverse("ledger", args=[suite.slug]), 302)]
    assert said(response) == [("success", "Renewed 2 entries, each with its own history event.")]
    assert [AuditEvent.objects.filter(entry=e, action="renew").count() for e in entries] == [
        1, 1, 0]
    shown = {r.entry.pk: r.entry.renewals for r in response.context["rows"]}
    assert [shown[e.pk] for e in entries] == [1, 1, 0]


def test_each_refused_row_is_listed_with_its_node_and_reason(
        client_for, owner, suite, entries, today):
    quarantine_clear(entry=entries[0], note="Fixed.", actor="@finley")
    missing = entries[-1].pk + 1
    response = client_for(owner).post(
        bulk_url(suite), renewal(today, *entries, entry=[e.pk for e in entries] + [missing]),
        follow=True)
    assert said(response) == [
        ("warning", "Renewed 2 of 4 selected entries; 2 refused, left unchanged:"),
        ("error", f"{entries[0].node.nodeid} was not renewed: "
                  "This entry has already been cleared."),
        ("error", f"Not renewed: No entry #{missing} in this suite."),
    ]
    html = response.content.decode()
    assert html.index("Renewed 2 of 4") < html.index("was not renewed") < html.index('id="glance"')


def test_nothing_done_is_said_as_an_error(client_for, owner, suite, entries, today):
    response = client_for(owner).post(
        bulk_url(suite), renewal(today, entries[0], evidence="ci/run-100"), follow=True)
    assert said(response)[0] == ("error", "Renewed 0 of 1 selected entry; 1 refused, left "
                                          "unchanged:")
    assert "needs new evidence" in said(response)[1][1]


def test_a_clearance_takes_the_reason_as_each_note(client_for, owner, suite, entries):
    response = client_for(owner).post(bulk_url(suite), {
        "action": "clear", "entry": [entries[1].pk], "note": "Test deleted."}, follow=True)
    assert said(response) == [("success", "Cleared 1 entry, each with its own history event.")]
    assert QuarantineEntry.objects.get(pk=entries[1].pk).cleared_note == "Test deleted."


def test_select_all_takes_every_row_the_page_showed(client_for, owner, suite, entries, today):
    data = renewal(today, entries[0], shown=[e.pk for e in entries[1:]], select_page="on")
    client_for(owner).post(bulk_url(suite), data)
    assert [QuarantineEntry.objects.get(pk=e.pk).renewals for e in entries] == [0, 1, 1]


@pytest.mark.parametrize(("data", "message"), [
    pytest.param({"entry": []}, "Select at least one entry.", id="nothing-selected"),
    pytest.param({"note": ""}, "Give the reason", id="no-reason"),
    pytest.param({"action": "delete"}, "Select a valid choice", id="unknown-action"),
    pytest.param({"entry": ["x"]}, "An entry id is a whole number.", id="not-an-id"),
])
def test_a_request_refused_as_a_whole_says_why(
        client_for, owner, suite, entries, today, data, message):
    response = client_for(owner).post(bulk_url(suite), renewal(today, entries[0], **data),
                                      follow=True)
    [(level, text)] = said(response)
    assert level == "error" and message in text
    assert not AuditEvent.objects.filter(action__in=["renew", "clear"]).exists()


def test_the_answer_goes_back_to_the_ledger_as_it_was_filtered(
        client_for, owner, suite, entries, today):
    response = client_for(owner).post(
        bulk_url(suite), renewal(today, entries[0], query="q=test_pay&state=open\r\nX: y"))
    assert response["Location"] == (reverse("ledger", args=[suite.slug])
                                    + "?q=test_pay&state=open%0D%0AX%3A+y")


def test_a_viewer_sees_no_box_and_is_refused_the_post(client_for, viewer, suite, entries, today):
    client = client_for(viewer)
    html = client.get(reverse("ledger", args=[suite.slug])).content.decode()
    assert 'form="bulk"' not in html and "ledger/bulk/" not in html
    assert client.post(bulk_url(suite), renewal(today, *entries)).status_code == 403
    assert QuarantineEntry.objects.filter(renewals=1).count() == 0


def test_every_open_row_has_a_box_named_after_its_node(client_for, owner, suite, entries):
    quarantine_clear(entry=entries[2], note="Fixed.", actor="@finley")
    html = client_for(owner).get(reverse("ledger", args=[suite.slug]),
                                 {"state": "open"}).content.decode()
    boxes = re.findall(r'<input type="checkbox" id="pick-(\d+)" name="entry" value="\1" '
                       r'form="bulk" data-pick><label for="pick-\1"><span class="visually-hidden">'
                       r'Select ([^<]+)</span></label>', html)
    assert boxes == [(str(e.pk), e.node.nodeid) for e in entries[:2]]
    assert len({name for _, name in boxes}) == len(boxes)
    assert '<form id="bulk" class="bulk-bar" method="post"' in html
    assert 'name="csrfmiddlewaretoken"' in html.split('<form id="bulk"')[1].split("</form>")[0]
    assert "Select all on this page" in html and "js/bulk.js" in html


def test_a_cleared_row_has_no_box_and_no_open_row_no_bar(client_for, owner, suite, entries):
    quarantine_clear(entry=entries[0], note="Fixed.", actor="@finley")
    client = client_for(owner)
    html = client.get(reverse("ledger", args=[suite.slug]), {"state": "cleared"}).content.decode()
    assert f'name="entry" value="{entries[0].pk}"' not in html
    assert f'id="entry-{entries[0].pk}"' in html and 'id="bulk"' not in html
    html = client.get(reverse("ledger", args=[suite.slug]), {"q": "nothing"}).content.decode()
    assert "No entry matches these filters." in html and 'id="bulk"' not in html


def test_a_filtered_list_brings_its_own_bar_with_its_query(client_for, owner, suite, entries):
    html = client_for(owner).get(reverse("ledger", args=[suite.slug]), {"q": "test_pay"},
                                 headers={"HX-Request": "true"}).content.decode()
    assert '<form id="bulk"' in html and 'name="query" value="q=test_pay"' in html
    assert html.count('name="shown"') == 1


def test_a_row_changed_in_place_keeps_its_box(client_for, owner, suite, entries, today):
    html = client_for(owner).post(
        reverse("entry_renew", args=[suite.slug, entries[0].pk]),
        {"expires": (today + timedelta(days=20)).isoformat(), "evidence": "ci/run-5",
         "place": "row"}, headers={"HX-Request": "true"}).content.decode()
    assert f'name="entry" value="{entries[0].pk}" form="bulk"' in html
