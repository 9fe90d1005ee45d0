"""A node that failed every run is broken, not flaky (issue 55, point 4): quarantine is for
flaky tests (SPEC 2). A new test failing 30 of the guard's 30 runs is offered no Quarantine
on its report row, but its row in the report and its failures; the quarantine service (so
the form, the API, the admin and the import alike) refuses it with a sentence saying why.
The board decides from its own stored runs (``rules.always_failing``), never from the
counts a form sends."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from flakeboard import rules
from ledger.models import AuditEvent, QuarantineEntry
from ledger.quarantine import quarantine_create
from runs.ingest import report_ingest
from tests.helpers import STEADY, body, make_known, measurement

BROKEN = "tests/test_new.py::test_always_fails"
FLAKY = "tests/test_old.py::test_over_budget"
WHY = "failed all 30 runs of its latest measurement"


@pytest.mark.parametrize(
    ("runs", "failures", "classification", "always"),
    [
        (30, 30, None, True),
        (1, 1, None, True),
        (30, 30, "broken", True),
        (30, 29, None, False),
        (30, 0, None, False),
        (0, 0, None, False),
        (3, 3, "order_dependent", False),
    ],
)  # fails only after its polluter: passes alone
def test_always_failing_is_every_run_of_at_least_one(runs, failures, classification, always):
    assert rules.always_failing(runs, failures, classification) is always


def broken_report(suite):
    """A report with the guard's runs of a new test that failed all 30, and an old test
    over budget that passed some of its runs."""
    make_known(suite, measurement(FLAKY))
    rows = [measurement(BROKEN, n=30, fails=30, new_test=True), measurement(FLAKY, n=200, fails=40)]
    return report_ingest(suite=suite, body=body(rows), actor="ci", query={"commit": "pr-7"}).upload


def quarantine(suite, nodeid: str, today, *, n: int, fails: int):
    """An entry for ``nodeid`` by @finley, claiming ``fails`` of ``n`` runs."""
    return quarantine_create(
        suite=suite,
        nodeid=nodeid,
        owner="@finley",
        evidence="ci/run-1",
        n=n,
        fails=fails,
        expires=today + timedelta(days=7),
        actor="@finley",
        today=today,
    )


def actions(html: str, m) -> str:
    """The action cell of a measurement's row on its report's page."""
    row = html[html.index(f'<tr id="m{m.position}"') :]
    row = row[: row.index("</tr>")]
    return re.search(r'<td class="actions">(.*?)</td>', row, re.S).group(1)


def test_its_report_row_offers_its_row_and_failures_not_quarantine(suite, client_for, owner):
    report = broken_report(suite)
    broken, flaky = (report.measurements.get(node__nodeid=node) for node in (BROKEN, FLAKY))
    assert (broken.reason, broken.status) == ("over_budget", "FAIL")
    html = client_for(owner).get(reverse("report", args=[suite.slug, report.pk])).content.decode()
    cell = actions(html, broken)
    assert "Quarantine" not in cell.replace("quarantine is for flaky tests", "")
    assert "Broken, not flaky: it failed all 30 runs." in cell
    assert f'href="{reverse("report", args=[suite.slug, report.pk])}#m{broken.position}"' in cell
    assert f'href="{reverse("node", args=[suite.slug, broken.node.key])}"' in cell
    assert "Quarantine<span" in actions(html, flaky)  # flaky, over budget: offered


def test_the_service_refuses_it_and_stores_nothing(suite, today):
    broken_report(suite)
    events = AuditEvent.objects.count()
    with pytest.raises(ValidationError) as refused:
        quarantine(suite, BROKEN, today, n=30, fails=29)  # a form's claim: the board's runs decide
    (error,) = refused.value.error_dict["node"]
    assert error.code == "not_flaky"
    assert WHY in error.message and "broken, not flaky" in error.message
    assert "Quarantine is for flaky tests" in error.message
    assert not QuarantineEntry.objects.filter(node__nodeid=BROKEN).exists()
    assert AuditEvent.objects.count() == events
    # The over-budget test that passed some runs is quarantined as ever.
    quarantine(suite, FLAKY, today, n=200, fails=40)


def test_the_form_says_why_on_the_node_field(suite, client_for, owner, today):
    broken_report(suite)
    response = client_for(owner).post(
        reverse("entry_new", args=[suite.slug]),
        {
            "node": BROKEN,
            "owner": "@finley",
            "expires": (today + timedelta(days=7)).isoformat(),
            "evidence": "ci/run-1",
            "n": "30",
            "fails": "30",
        },
    )
    html = response.content.decode()
    assert response.status_code == 200 and WHY in html and "broken, not flaky" in html
    assert not QuarantineEntry.objects.filter(node__nodeid=BROKEN).exists()


def test_a_later_run_that_passes_makes_it_flaky_again(suite, client_for, owner, today):
    broken_report(suite)
    node_page = reverse("node_by_id", args=[suite.slug, BROKEN])
    html = client_for(owner).get(node_page, follow=True).content.decode()
    assert "broken, not flaky" in html and "Quarantine this node" not in html
    report_ingest(
        suite=suite,
        body=body([measurement(BROKEN, n=200, fails=150), measurement(STEADY.format(0))]),
        actor="ci",
    )
    html = client_for(owner).get(node_page, follow=True).content.decode()
    assert "broken, not flaky" not in html and "Quarantine this node" in html
    quarantine(suite, BROKEN, today, n=200, fails=150)


def test_the_import_command_refuses_it_too(suite, today, tmp_path):
    broken_report(suite)
    path = tmp_path / "flake_ledger.json"
    path.write_text(
        json.dumps(
            {
                BROKEN: {
                    "class": "flake",
                    "seed_base": 1,
                    "n": 200,
                    "fails": 5,
                    "owner": "@finley",
                    "expires": (today + timedelta(days=5)).isoformat(),
                    "evidence": "ci/run-1",
                }
            }
        )
    )
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_ledger", suite.slug, str(path), stdout=StringIO(), stderr=err)
    assert f"Refused {BROKEN}: node: {BROKEN} cannot be quarantined: it {WHY}" in err.getvalue()
    assert not QuarantineEntry.objects.exists()
