"""Ownership from CODEOWNERS (issue 20): stored by a lead or CI, audited; a node's default
owner prefills the create form, whether or not CI has named the node, and the form says
where its owner came from; the ledger filters by code owner and flags an owner CODEOWNERS
no longer names; the owners view sums each owner's and team's debt."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from flakeboard import rules
from ledger.codeowners import Unowned, codeowners_set
from ledger.forms.entries import UNOWNED_HELP
from ledger.models import AuditEvent, QuarantineEntry, Suite
from ledger.quarantine import quarantine_create
from tests.api_http import API
from tests.helpers import STEADY, make_known, measurement

PAY = "tests/payments/test_refund.py::test_partial"
UI = "tests/ui/test_cart.py::test_add"
CODEOWNERS = "* @lea\ntests/payments/ @org/payments @finley\ntests/ui/ @org/web\n"


@pytest.fixture
def known(suite):
    """Forty known nodes, PAY and UI among them (so the share cap leaves room)."""
    make_known(suite, measurement(PAY), measurement(UI), steady=38)
    return suite


def entry(suite, today, nodeid, owner, days=20):
    return quarantine_create(suite=suite, nodeid=nodeid, owner=owner, evidence="ci/run-1",
                             expires=today + timedelta(days=days), actor="@lea", today=today)


def test_the_service_stores_and_audits_in_one_go(suite):
    parsed = codeowners_set(suite=suite, text=CODEOWNERS, actor="@lea")
    assert len(parsed) == 3
    assert Suite.objects.get(pk=suite.pk).codeowners == CODEOWNERS
    event = AuditEvent.objects.get(suite=suite, action=AuditEvent.Action.SETTINGS)
    assert (event.actor, event.after["codeowners_rules"]) == ("@lea", 3)
    codeowners_set(suite=suite, text=CODEOWNERS, actor="@lea")  # unchanged: no event
    assert AuditEvent.objects.filter(suite=suite).count() == 1


def test_a_bad_file_is_refused_with_its_line_and_nothing_changes(suite):
    with pytest.raises(ValidationError) as caught:
        codeowners_set(suite=suite, text="* @lea\n\n!docs @x\n", actor="@lea")
    assert caught.value.messages[0].startswith("line 3:")
    with pytest.raises(ValidationError, match="3145728 bytes"):
        codeowners_set(suite=suite, text="#" * (rules.CODEOWNERS_MAX_BYTES + 1), actor="@lea")
    assert Suite.objects.get(pk=suite.pk).codeowners == ""
    assert not AuditEvent.objects.filter(suite=suite).exists()


def test_a_lead_pastes_or_uploads_it(client_for, lead, suite):
    client = client_for(lead)
    url = reverse("settings_codeowners", args=[suite.slug])
    answer = client.post(url, {"codeowners": CODEOWNERS}, follow=True)
    assert "CODEOWNERS saved: 3 rules, 4 owners." in answer.content.decode()
    upload = SimpleUploadedFile("CODEOWNERS", b"*.py @finley\n", content_type="text/plain")
    client.post(url, {"codeowners": "ignored @x", "upload": upload})
    assert Suite.objects.get(pk=suite.pk).codeowners == "*.py @finley\n"
    page = client.post(url, {"codeowners": "*.py @ok\n[x] @y\n"}).content.decode()
    assert "line 2:" in page and "character ranges" in page
    assert Suite.objects.get(pk=suite.pk).codeowners == "*.py @finley\n"


def test_the_command_sets_it_from_a_file_or_stdin(suite, tmp_path, monkeypatch):
    path = tmp_path / "CODEOWNERS"
    path.write_text(CODEOWNERS)
    out = io.StringIO()
    call_command("set_codeowners", "acme", str(path), stdout=out)
    assert out.getvalue() == "acme: CODEOWNERS saved: 3 rules, 4 owners.\n"
    assert Suite.objects.get(pk=suite.pk).codeowners == CODEOWNERS
    event = AuditEvent.objects.get(suite=suite, action=AuditEvent.Action.SETTINGS)
    assert (event.actor, event.after["codeowners_rules"]) == ("manage.py", 3)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"* @x\nx nobody\n")))
    with pytest.raises(CommandError, match="line 2:"):
        call_command("set_codeowners", "acme", "-")
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(CommandError, match="not UTF-8"):
        call_command("set_codeowners", "acme", str(path))
    assert Suite.objects.get(pk=suite.pk).codeowners == CODEOWNERS  # refused: unchanged
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))
    call_command("set_codeowners", "acme", "-", stdout=out)
    assert out.getvalue().endswith("acme: No CODEOWNERS: nodes have no default owner.\n")
    assert Suite.objects.get(pk=suite.pk).codeowners == ""
    with pytest.raises(CommandError, match="No suite"):
        call_command("set_codeowners", "nope", str(path))


def test_ci_puts_it_with_a_write_token(board, suite, token):
    path = f"{API}/suites/{suite.slug}/codeowners"
    answer = board.call("PUT", path, token=token, body=CODEOWNERS.encode(),
                        content_type="text/plain")
    assert answer.status == 200, answer.raw
    assert answer.json == {"suite": suite.slug, "rules": 3, "owners": 4}
    assert Suite.objects.get(pk=suite.pk).codeowners == CODEOWNERS
    bad = board.call("PUT", path, token=token, body=b"* @a\nx nobody\n",
                     content_type="text/plain")
    assert (bad.status, bad.error) == (422, "validation_failed")
    assert bad.json["details"][0]["row"] == 2
    wrong = board.call("PUT", path, token=token, body=b"{}", content_type="application/json")
    assert wrong.status == 415
    binary = board.call("PUT", path, token=token, body=b"\xff\xfe", content_type="text/plain")
    assert (binary.status, binary.error) == (400, "invalid_text")
    assert Suite.objects.get(pk=suite.pk).codeowners == CODEOWNERS


def test_the_create_form_offers_the_first_code_owner_of_a_known_node(client_for, owner, known):
    codeowners_set(suite=known, text=CODEOWNERS, actor="@lea")
    client = client_for(owner)
    url = reverse("entry_new", args=[known.slug])

    def offered(query):
        return client.get(url, query).context["form"].initial["owner"]

    assert offered({"node": PAY}) == "@org/payments"
    assert offered({"node": UI}) == "@org/web"
    assert offered({"node": PAY, "owner": "@sam"}) == "@sam"  # the query's owner wins
    assert offered({}) == "@finley"


def test_a_node_ci_has_not_named_is_offered_its_code_owner(client_for, owner, known):
    """CODEOWNERS matches the path in the node id: the node need not be known yet."""
    codeowners_set(suite=known, text="tests/payments/ @org/payments @finley\n", actor="@lea")
    answer = client_for(owner).get(reverse("entry_new", args=[known.slug]),
                                   {"node": "tests/payments/test_new.py::test_refund"})
    form = answer.context["form"]
    assert form.initial["owner"] == "@org/payments"
    said = "Offered from CODEOWNERS, line 1: tests/payments/ @org/payments @finley."
    assert said in form["owner"].help_text
    assert said in answer.content.decode()


@pytest.mark.parametrize(("codeowners", "node", "why"), [
    ("tests/payments/ @org/payments\n", "tests/ui/test_new.py::t",
     "since CODEOWNERS names no owner for this path"),
    ("tests/payments/ @org/payments\ntests/payments/legacy/\n",
     "tests/payments/legacy/test_old.py::t", "since CODEOWNERS names no owner for this path"),
    ("* @org/all\n", "com.acme.RefundTest::testPartial",
     "since this node id names no file for CODEOWNERS to match"),
    ("", "tests/payments/test_new.py::t", "since the suite has no CODEOWNERS"),
    ("* @org/all\n", None, "as no node id is given yet"),
])
def test_otherwise_the_signed_in_user_is_offered_and_the_form_says_why(
    client_for, owner, known, codeowners, node, why
):
    codeowners_set(suite=known, text=codeowners, actor="@lea")
    query = {"node": node} if node else {}
    answer = client_for(owner).get(reverse("entry_new", args=[known.slug]), query)
    form = answer.context["form"]
    assert form.initial["owner"] == "@finley"
    said = f"Offered: you, the signed-in user, {why}."
    assert said in form["owner"].help_text
    assert said in answer.content.decode()
    assert set(UNOWNED_HELP) == set(Unowned)  # each reason has its words


def test_the_query_owner_is_offered_as_the_link_gave_it(client_for, owner, known):
    codeowners_set(suite=known, text=CODEOWNERS, actor="@lea")
    form = client_for(owner).get(reverse("entry_new", args=[known.slug]),
                                 {"node": PAY, "owner": "@sam"}).context["form"]
    assert form.initial["owner"] == "@sam"
    assert "Offered by the link that opened this form." in form["owner"].help_text


def test_the_offer_follows_the_node_id_as_it_is_typed(client_for, owner, known):
    """The form asks again (htmx) when the node id changes: the owner field follows while
    it holds what was offered, and is left alone once someone typed over it."""
    codeowners_set(suite=known, text=CODEOWNERS, actor="@lea")
    client = client_for(owner)
    url = reverse("entry_new", args=[known.slug])
    page = client.get(url).content.decode()
    assert 'hx-trigger="input changed delay:400ms from:#id_node"' in page
    assert 'name="offered" value="@finley"' in page  # no node id yet: the signed-in user
    typed = {"node": "tests/ui/test_new.py::t", "owner": "@finley", "offered": "@finley"}
    answer = client.get(url, typed, headers={"HX-Request": "true"})
    html = answer.content.decode()
    assert "<form" not in html and "HX-Request" in answer["Vary"]
    assert 'name="owner" value="@org/web"' in html
    assert 'name="offered" value="@org/web"' in html
    assert "Offered from CODEOWNERS, line 3: tests/ui/ @org/web." in html
    mine = {"node": "tests/ui/test_new.py::t", "owner": "@sam", "offered": "@finley"}
    assert client.get(url, mine, headers={"HX-Request": "true"}).status_code == 204


def test_the_ledger_filters_by_code_owner_and_flags_strangers(client_for, owner, known, today):
    codeowners_set(suite=known, text=CODEOWNERS, actor="@lea")
    pay = entry(known, today, PAY, "@finley")
    ui = entry(known, today, UI, "@finley")
    client = client_for(owner)
    url = reverse("ledger", args=[known.slug])
    listed = client.get(url, {"codeowner": "@org/payments"}).context["rows"]
    assert [row.entry.pk for row in listed] == [pay.pk]
    rows = {row.entry.pk: row for row in client.get(url).context["rows"]}
    assert not rows[pay.pk].outside_codeowners  # @finley is named for payments
    assert rows[ui.pk].outside_codeowners  # only @org/web is, for ui
    assert client.get(url).content.decode().count("owner not in CODEOWNERS") == 1
    page = client.get(reverse("entry", args=[known.slug, ui.pk])).content.decode()
    assert "owner not in CODEOWNERS" in page and "@org/web" in page


def test_without_codeowners_nothing_is_flagged(client_for, owner, known, today):
    entry(known, today, UI, "@finley")
    rows = client_for(owner).get(reverse("ledger", args=[known.slug])).context["rows"]
    assert not any(row.outside_codeowners for row in rows)


def test_the_owners_view_sorts_by_debt_and_links_each_figure(
    client_for, viewer, known, today, django_assert_max_num_queries
):
    codeowners_set(suite=known, text=CODEOWNERS, actor="@lea")
    entry(known, today, PAY, "@finley", days=3)  # expiring
    late = entry(known, today, UI, "@sam", days=20)
    QuarantineEntry.objects.filter(pk=late.pk).update(
        expires=today - timedelta(days=1), renewals=2, ready_to_clear=True)
    client = client_for(viewer)
    url = reverse("owners", args=[known.slug])
    with django_assert_max_num_queries(8):
        answer = client.get(url)
    rows = [(r["debt"].name, r["debt"].expired, r["debt"].expiring, r["debt"].open,
             r["debt"].ready) for r in answer.context["rows"]]
    assert rows == [("@org/web", 1, 0, 1, 1), ("@sam", 1, 0, 1, 1),
                    ("@finley", 0, 1, 1, 0), ("@org/payments", 0, 1, 1, 0)]
    sam = answer.context["rows"][1]
    assert sam["debt"].renewals_per_entry == 2
    assert sam["links"]["expired"] == reverse("ledger", args=[known.slug]) + (
        "?owner=%40sam&state=expired")
    assert answer.context["rows"][0]["links"]["ready"].endswith("?codeowner=%40org%2Fweb&ready=on")
    page = answer.content.decode()
    assert 'class="table-wrap" tabindex="0" role="region"' in page
    # Each link opens the entries it counts.
    ledger = client.get(sam["links"]["expired"]).context["rows"]
    assert [row.entry.pk for row in ledger] == [late.pk]
    team = client.get(answer.context["rows"][0]["links"]["ready"]).context["rows"]
    assert [row.entry.pk for row in team] == [late.pk]


def test_the_owners_view_queries_do_not_grow_with_entries(client_for, viewer, known, today):
    codeowners_set(suite=known, text=CODEOWNERS, actor="@lea")
    client = client_for(viewer)
    url = reverse("owners", args=[known.slug])

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    entry(known, today, STEADY.format(0), "@owner0")
    few = queries()
    for i in range(1, 2):  # the share cap (5% of 40) holds two
        entry(known, today, STEADY.format(i), f"@owner{i}")
    assert queries() == few


def test_the_owners_view_when_empty(client_for, viewer, suite):
    page = client_for(viewer).get(reverse("owners", args=[suite.slug])).content.decode()
    assert "No open entries" in page and "Teams show here" in page
