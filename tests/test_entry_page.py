"""The entry page, and renewing and clearing in place: from a ledger row (the row
re-renders) and from the entry page (its body re-renders), with htmx or without it."""

from datetime import UTC, datetime, timedelta

from django.urls import reverse

from ledger.models import AuditEvent, QuarantineEntry
from ledger.quarantine import quarantine_clear, quarantine_create, quarantine_renew
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest
from tests.helpers import body, field_errors, measurement, node_page
from tests.world import module_world

NODE = "tests/test_pay.py::test_refund_retry"
HTMX = {"HX-Request": "true"}


def add_entry(suite, today):
    rows = [measurement(f"tests/test_many.py::test_{i}") for i in range(40)]
    report_ingest(suite=suite, body=body([*rows, measurement(NODE, fails=7, seed_base=9137)]),
                  actor="ci")
    return quarantine_create(
        suite=suite, nodeid=NODE, owner="@finley", expires=today + timedelta(days=12),
        evidence="https://ci.example.com/runs/88213", actor="@finley", today=today, n=200,
        fails=5, reported_upper95=0.0537, seed_base=9137, note="Flaky under load.",
    )


build_world, entry = module_world("entry", add_entry)


def url(name, suite, entry):
    return reverse(name, args=[suite.slug, entry.pk])


def renewal(today, days=20, **extra):
    return {"expires": (today + timedelta(days=days)).isoformat(), "evidence": "ci/run-90000",
            **extra}


def test_the_page_shows_every_field(client_for, viewer, suite, entry):
    html = client_for(viewer).get(url("entry", suite, entry)).content.decode()
    assert NODE in html and "@finley" in html
    assert entry.expires.isoformat() in html and "in 12 days" in html
    assert "0 days" in html  # age
    assert "<dt>Renewals</dt><dd>0</dd>" in html
    assert '<a href="https://ci.example.com/runs/88213"' in html
    assert "5 failures in 200 runs, upper95 0.0572" in html
    assert "reported 0.0537" in html and "upper95_mismatch" in html
    assert "<code>9137</code>" in html and "Flaky under load." in html
    assert '<span class="badge st-active">Active</span>' in html


def test_the_history_shows_who_when_before_after_and_note(client_for, viewer, suite, entry,
                                                          today):
    quarantine_renew(entry=entry, expires=today + timedelta(days=25), evidence="ci/run-2",
                     actor="@sam", today=today, note="Still flaky; fix in review.")
    html = client_for(viewer).get(url("entry", suite, entry)).content.decode()
    history = html[html.index('id="history-heading"'):]
    assert "Quarantined" in history and "Renewed" in history and "@sam" in history
    assert "<del>https://ci.example.com/runs/88213</del> → <ins>ci/run-2</ins>" in history
    assert "<del>0</del> → <ins>1</ins>" in history
    assert "Still flaky; fix in review." in history
    event = AuditEvent.objects.get(entry=entry, action="renew")
    assert event.at.strftime("%Y-%m-%d %H:%M") in history


def test_the_latest_measurements_load_from_the_node_page(client_for, viewer, suite, entry):
    client = client_for(viewer)
    html = client.get(url("entry", suite, entry)).content.decode()
    node_url = node_page(suite.slug, NODE)
    assert f'hx-get="{node_url}?panel=latest" hx-trigger="load"' in html
    assert f'<a href="{node_url}">' in html  # without JavaScript, a link to them
    panel = client.get(node_url, {"panel": "latest"}, headers=HTMX)
    assert b"<html" not in panel.content
    assert b"0.0639" not in panel.content and b"7</td>" in panel.content  # fails=7 of 200


def test_a_text_evidence_is_not_a_link(client_for, viewer, suite, today):
    report_ingest(suite=suite, body=body([measurement(f"t.py::t{i}") for i in range(40)]),
                  actor="ci")
    entry = quarantine_create(suite=suite, nodeid="t.py::t1", owner="@sam", evidence="ci/run-7",
                              expires=today + timedelta(days=3), actor="@sam", today=today)
    html = client_for(viewer).get(url("entry", suite, entry)).content.decode()
    assert '<code title="ci/run-7">ci/run-7</code>' in html
    assert 'href="ci/run-7"' not in html


# --- renew ---------------------------------------------------------------------------


def test_renew_from_a_ledger_row_rerenders_the_row(client_for, owner, suite, entry, today):
    client = client_for(owner)
    editing = client.get(url("entry_renew", suite, entry), {"place": "row"}, headers=HTMX)
    row = f'<tr id="entry-{entry.pk}" class="editing"'
    assert editing.content.decode().lstrip().startswith(row)
    assert b'name="place" value="row"' in editing.content
    response = client.post(url("entry_renew", suite, entry),
                           renewal(today, place="row", note="still flaky"), headers=HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    changed = f'<tr id="entry-{entry.pk}" class="state-active" tabindex="-1" data-focus>'
    assert html.lstrip().startswith(changed)
    assert "<html" not in html and "Renewed until" in html
    entry.refresh_from_db()
    assert entry.renewals == 1 and entry.evidence == "ci/run-90000"
    event = AuditEvent.objects.get(entry=entry, action="renew")
    assert event.actor == "@finley" and event.note == "still flaky"


def test_renew_from_the_entry_page_rerenders_its_body(client_for, owner, suite, entry, today):
    response = client_for(owner).post(url("entry_renew", suite, entry),
                                      renewal(today, place="entry"), headers=HTMX)
    html = response.content.decode()
    assert "<html" not in html and 'id="history-heading"' in html
    assert "Renewed until" in html and "<dt>Renewals</dt><dd>1</dd>" in html


def test_renew_without_htmx_redirects_to_the_entry(client_for, owner, suite, entry, today):
    client = client_for(owner)
    page = client.get(url("entry_renew", suite, entry))
    assert b"<html" in page.content and b'name="evidence"' in page.content
    response = client.post(url("entry_renew", suite, entry), renewal(today))
    assert response.status_code == 302 and response["Location"] == url("entry", suite, entry)
    assert b"Renewed until" in client.get(response["Location"]).content


def test_renew_needs_new_evidence(client_for, owner, suite, entry, today):
    response = client_for(owner).post(
        url("entry_renew", suite, entry),
        renewal(today, evidence=entry.evidence, place="row"), headers=HTMX,
    )
    assert response.content.decode().lstrip().startswith(
        f'<tr id="entry-{entry.pk}" class="editing"')
    assert "A renewal needs new evidence" in field_errors(response, f"renew{entry.pk}_evidence")
    entry.refresh_from_db()
    assert entry.renewals == 0


def test_a_refused_renewal_keeps_its_form_open(client_for, owner, suite, entry, today):
    response = client_for(owner).post(url("entry_renew", suite, entry),
                                      renewal(today, days=31, place="entry"), headers=HTMX)
    assert "at most 30 days ahead" in field_errors(response, f"renew{entry.pk}_expires")
    assert b"<details class=\"action\" open>" in response.content  # the form stays open


def test_a_tier_violation_cannot_be_renewed_but_can_be_cleared(
    client_for, owner, suite, entry, today
):
    tier_rule_add(suite=suite, glob="tests/test_pay.py::*", tier=0, actor="@lea")
    client = client_for(owner)
    html = client.get(url("entry", suite, entry)).content.decode()
    assert "A tier rule now makes this node tier 0" in html and "tests/test_pay.py::*" in html
    assert url("entry_renew", suite, entry) not in html
    assert url("entry_clear", suite, entry) in html
    response = client.post(url("entry_renew", suite, entry), renewal(today))
    assert "cannot be quarantined" in response.content.decode()
    assert QuarantineEntry.objects.get(pk=entry.pk).renewals == 0


# --- clear ---------------------------------------------------------------------------


def test_clear_from_a_ledger_row(client_for, owner, suite, entry):
    client = client_for(owner)
    editing = client.get(url("entry_clear", suite, entry), {"place": "row"}, headers=HTMX)
    assert b'name="note"' in editing.content and b"<html" not in editing.content
    response = client.post(url("entry_clear", suite, entry),
                           {"note": "Fixed the race.", "place": "row"}, headers=HTMX)
    html = response.content.decode()
    changed = f'<tr id="entry-{entry.pk}" class="state-cleared" tabindex="-1" data-focus>'
    assert html.lstrip().startswith(changed)
    assert '<span class="badge st-cleared">Cleared</span>' in html
    assert url("entry_renew", suite, entry) not in html
    event = AuditEvent.objects.get(entry=entry, action="clear")
    assert event.note == "Fixed the race." and event.actor == "@finley"


def test_clear_asks_for_a_note(client_for, owner, suite, entry):
    response = client_for(owner).post(url("entry_clear", suite, entry),
                                      {"note": "  ", "place": "row"}, headers=HTMX)
    assert "Say why the entry is cleared" in field_errors(response, f"clear{entry.pk}_note")
    assert QuarantineEntry.objects.get(pk=entry.pk).cleared_at is None


def test_clear_from_the_entry_page(client_for, owner, suite, entry):
    response = client_for(owner).post(url("entry_clear", suite, entry),
                                      {"note": "Test deleted.", "place": "entry"}, headers=HTMX)
    html = response.content.decode()
    assert "<html" not in html and "Cleared: the entry has left the ledger" in html
    assert "This entry is cleared" in html and "Test deleted." in html


def test_clear_without_htmx_redirects(client_for, lead, suite, entry):
    response = client_for(lead).post(url("entry_clear", suite, entry), {"note": "fixed"})
    assert response.status_code == 302
    assert QuarantineEntry.objects.get(pk=entry.pk).cleared_at is not None


def test_an_already_cleared_entry_says_so(client_for, owner, suite, entry, today):
    quarantine_clear(entry=entry, note="fixed", actor="@sam")
    client = client_for(owner)
    page = client.get(url("entry_renew", suite, entry)).content.decode()
    assert "This entry is cleared: there is nothing left to renew." in page
    response = client.post(url("entry_clear", suite, entry), {"note": "again"})
    assert "already been cleared" in response.content.decode()
    assert AuditEvent.objects.filter(entry=entry, action="clear").count() == 1


def test_cancel_brings_back_the_row(client_for, owner, suite, entry):
    response = client_for(owner).get(url("entry", suite, entry), {"place": "row"}, headers=HTMX)
    assert response.content.decode().lstrip().startswith(f'<tr id="entry-{entry.pk}"')
    assert b"<html" not in response.content


def test_the_entry_page_makes_a_bounded_number_of_queries(
    client_for, viewer, suite, entry, today, django_assert_max_num_queries
):
    for i in range(10):
        quarantine_renew(entry=entry, expires=today + timedelta(days=20), evidence=f"ci/run-{i}",
                         actor="@sam", today=today)
    client = client_for(viewer)
    with django_assert_max_num_queries(10):
        response = client.get(url("entry", suite, entry))
    assert response.content.decode().count("<td>Renewed</td>") == 10


def test_a_cleared_entrys_age_stops_at_the_day_it_was_cleared(client_for, owner, suite, entry,
                                                              today):
    quarantine_clear(entry=entry, note="Fixed the pool.", actor="@finley")
    midnight = datetime.combine(today, datetime.min.time(), tzinfo=UTC)
    QuarantineEntry.objects.filter(pk=entry.pk).update(
        created_at=midnight - timedelta(days=30, hours=-9),
        cleared_at=midnight - timedelta(days=20, hours=-15))
    entry.refresh_from_db()
    assert entry.age_days(today) == entry.age_days(today + timedelta(days=365)) == 10
    client = client_for(owner)
    html = client.get(url("entry", suite, entry)).content.decode()
    assert "<dt>Age</dt><dd>10 days in the ledger, until it was cleared" in html
    csv_rows = client.get(reverse("ledger_csv", args=[suite.slug]), {"state": "cleared"})
    header, row = csv_rows.getvalue().decode().splitlines()
    assert row.split(",")[header.split(",").index("age_days")] == "10"
