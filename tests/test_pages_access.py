"""Who may open each page and take each action (SPEC 6a), and CSRF on every form post.

Readers (viewer, owner, lead) read every page; owners and leads also create, renew and
clear. Outsiders get 404, members with too low a role 403, and the signed-out are sent to
sign in. Staff lead every suite.
"""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse

from ledger.models import AuditEvent, QuarantineEntry
from ledger.quarantine import quarantine_create
from runs.ingest import report_ingest, signals_ingest
from tests.helpers import body, measurement, record

FLAKY = "tests/test_pay.py::test_refund_retry"
QUARANTINED = "tests/test_pay.py::test_capture_timeout"


@pytest.fixture
def board(suite, today):
    """A suite with a report, a verdict batch and one open entry."""
    rows = [measurement(f"tests/test_many.py::test_{i}") for i in range(40)]
    report = report_ingest(
        suite=suite, body=body([*rows, measurement(FLAKY, fails=9)]), actor="ci"
    ).upload
    batch = signals_ingest(suite=suite, body=body([record(FLAKY, prop="fail")]), actor="ci").upload
    entry = quarantine_create(
        suite=suite, nodeid=QUARANTINED, owner="@finley", expires=today + timedelta(days=10),
        evidence="ci/run-1", actor="@finley", today=today,
    )
    return {"report": report, "batch": batch, "entry": entry}


def page_urls(suite, board):
    slug, entry = suite.slug, board["entry"].pk
    return {
        "overview": reverse("overview", args=[slug]),
        "ledger": reverse("ledger", args=[slug]),
        "entry": reverse("entry", args=[slug, entry]),
        "reports": reverse("reports", args=[slug]),
        "report": reverse("report", args=[slug, board["report"].pk]),
        "verdicts": reverse("verdicts", args=[slug]),
        "batch": reverse("batch", args=[slug, board["batch"].pk]),
        "node": reverse("node", args=[slug, FLAKY]),
    }


def action_urls(suite, board):
    slug, entry = suite.slug, board["entry"].pk
    return {
        "entry_new": reverse("entry_new", args=[slug]),
        "entry_renew": reverse("entry_renew", args=[slug, entry]),
        "entry_clear": reverse("entry_clear", args=[slug, entry]),
    }


READ = {"lead": 200, "owner": 200, "viewer": 200, "outsider": 404, "staff": 200, None: 302}
WRITE = {"lead": 200, "owner": 200, "viewer": 403, "outsider": 404, "staff": 200, None: 302}
PEOPLE = list(READ)


@pytest.fixture
def person(request):
    return None if request.param is None else request.getfixturevalue(request.param)


def _who(person):
    if person is None:
        return None
    if person.is_staff:
        return "staff"
    return {"lea": "lead", "finley": "owner", "vic": "viewer", "otto": "outsider"}[
        person.username
    ]


@pytest.mark.parametrize("person", PEOPLE, indirect=True, ids=str)
@pytest.mark.parametrize("name", ["overview", "ledger", "entry", "reports", "report",
                                  "verdicts", "batch", "node"])
def test_reading_pages(client_for, suite, board, person, name):
    response = client_for(person).get(page_urls(suite, board)[name])
    assert response.status_code == READ[_who(person)]
    if person is None:
        assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("person", PEOPLE, indirect=True, ids=str)
@pytest.mark.parametrize("action", ["entry_new", "entry_renew", "entry_clear"])
def test_action_forms(client_for, suite, board, person, action):
    response = client_for(person).get(action_urls(suite, board)[action])
    assert response.status_code == WRITE[_who(person)]


def _posts(suite, board, today):
    urls = action_urls(suite, board)
    expires = (today + timedelta(days=20)).isoformat()
    return {
        "entry_new": (urls["entry_new"], {"node": FLAKY, "owner": "@finley", "expires": expires,
                                          "evidence": "ci/run-7"}),
        "entry_renew": (urls["entry_renew"], {"expires": expires, "evidence": "ci/run-8"}),
        "entry_clear": (urls["entry_clear"], {"note": "fixed the race"}),
    }


def _ledger_state():
    return (
        QuarantineEntry.objects.count(),
        QuarantineEntry.objects.filter(cleared_at__isnull=False).count(),
        AuditEvent.objects.count(),
    )


@pytest.mark.parametrize("person", PEOPLE, indirect=True, ids=str)
@pytest.mark.parametrize("action", ["entry_new", "entry_renew", "entry_clear"])
def test_actions(client_for, suite, board, today, person, action):
    url, data = _posts(suite, board, today)[action]
    before = _ledger_state()
    response = client_for(person).post(url, data)
    who = _who(person)
    if who in ("lead", "owner", "staff"):
        assert response.status_code == 302, response.content.decode()[:2000]
        assert _ledger_state() != before
        event = AuditEvent.objects.latest("pk")
        assert event.actor == f"@{person.username}"
    else:
        assert response.status_code == WRITE[who]
        assert _ledger_state() == before


@pytest.mark.parametrize("action", ["entry_new", "entry_renew", "entry_clear"])
def test_every_form_post_needs_the_csrf_token(suite, board, owner, today, action):
    url, data = _posts(suite, board, today)[action]
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)
    before = _ledger_state()
    assert browser.post(url, data).status_code == 403
    assert _ledger_state() == before
    form = browser.get(url)
    token = form.cookies["csrftoken"].value
    assert browser.post(url, {**data, "csrfmiddlewaretoken": token}).status_code == 302
    assert _ledger_state() != before


def test_htmx_posts_carry_the_token_in_a_header(suite, board, owner, today):
    url, data = _posts(suite, board, today)["entry_clear"]
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)
    token = browser.get(reverse("ledger", args=[suite.slug])).cookies["csrftoken"].value
    response = browser.post(url, {**data, "place": "row"},
                            headers={"HX-Request": "true", "X-CSRFToken": token})
    assert response.status_code == 200
    assert QuarantineEntry.objects.get(pk=board["entry"].pk).cleared_at is not None


def test_pages_of_another_suite_are_not_found(client_for, suite, other_suite, board, lead):
    # A lead of acme asking for acme's entry under the other suite's slug.
    url = reverse("entry", args=[other_suite.slug, board["entry"].pk])
    assert client_for(lead).get(url).status_code == 404


@pytest.mark.parametrize("method", ["put", "delete"])
def test_actions_answer_only_get_and_post(client_for, suite, board, owner, method):
    url = action_urls(suite, board)["entry_clear"]
    assert getattr(client_for(owner), method)(url).status_code == 405
