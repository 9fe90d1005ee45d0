"""The reports list and a report's page: one row per node, failing rows first, with the
"Quarantine" action on failing rows and the reason a tier-0/1 row cannot be quarantined."""

import html as htmllib
import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse

from ledger.quarantine import quarantine_create
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest
from tests.helpers import body, measurement, upload_summary
from tests.world import module_world

FLAKY = "tests/test_pay.py::test_refund_retry"
PROPERTY = "tests/test_properties.py::test_roundtrip"
QUARANTINED = "tests/test_pay.py::test_capture_timeout"
HTMX = {"HX-Request": "true"}


def clean_rows(k):
    return [measurement(f"tests/test_many.py::test_{i:03}") for i in range(k)]


def add_report(suite, today):
    tier_rule_add(suite=suite, glob="tests/test_properties.py::*", tier=0, actor="@lea")
    report_ingest(suite=suite, body=body(clean_rows(40)), actor="ci")
    quarantine_create(suite=suite, nodeid=QUARANTINED, owner="@sam", evidence="ci/run-1",
                      expires=today + timedelta(days=9), actor="@sam", today=today)
    rows = [
        *clean_rows(40),
        measurement(FLAKY, fails=5, upper95=0.0537, seed_base=9137),
        measurement(PROPERTY, fails=3),
        measurement(QUARANTINED, fails=4),
    ]
    return report_ingest(suite=suite, body=body({"measurements": rows, "commit": "abc123",
                                                 "branch": "main", "evidence": "ci/run-2"}),
                         actor="ci").upload


build_world, report = module_world("report", add_report)


def row_html(html, nodeid) -> str:
    for row in re.findall(r"<tr id=\"m\d+\".*?</tr>", html, re.S):
        if f"<code>{nodeid}</code>" in row.replace("<wbr>", ""):
            return row
    raise AssertionError(f"no row for {nodeid}")


def page(client, suite, report, **params):
    return client.get(reverse("report", args=[suite.slug, report.pk]), params)


def test_reports_list(client_for, viewer, suite, report):
    html = client_for(viewer).get(reverse("reports", args=[suite.slug])).content.decode()
    assert f'href="{reverse("report", args=[suite.slug, report.pk])}"' in html
    assert '<span class="badge s-fail">FAIL</span>' in html
    assert "abc123" in html and "main" in html
    assert "2 reports" in html


def test_reports_list_filters_by_status(client_for, viewer, suite, report):
    client = client_for(viewer)
    failing = client.get(reverse("reports", args=[suite.slug]), {"status": "FAIL"}).content
    assert b"1 report with status FAIL" in failing
    partial = client.get(reverse("reports", args=[suite.slug]), {"status": "OK"}, headers=HTMX)
    assert b"<html" not in partial.content and b"1 report with status OK" in partial.content


def test_one_row_per_node_failing_first(client_for, viewer, suite, report):
    html = page(client_for(viewer), suite, report).content.decode()
    rows = re.findall(r'<tr id="m\d+" class="status-(\w+)"', html)
    assert len(rows) == 43
    assert rows[:2] == ["fail", "fail"] and rows[2] == "warn" and set(rows[3:]) == {"ok"}
    assert "43 measurements" in html


def test_a_row_shows_status_reason_counts_and_both_bounds(client_for, viewer, suite, report):
    row = row_html(page(client_for(viewer), suite, report).content.decode(), FLAKY)
    assert '<span class="badge s-fail">FAIL</span>' in row
    assert '<code class="reason">over_budget</code>' in row
    assert '<td class="num">200</td>' in row and '<td class="num">5</td>' in row
    assert "0.0572" in row and "0.0537" in row and "mismatch" in row


def test_a_quarantined_row_shows_its_entry(client_for, viewer, suite, report):
    row = row_html(page(client_for(viewer), suite, report).content.decode(), QUARANTINED)
    assert '<span class="badge st-active">Active</span>' in row and "@sam" in row
    assert "Quarantine</a>" not in row


def test_failing_rows_link_to_the_prefilled_form(client_for, owner, suite, report):
    client = client_for(owner)
    row = row_html(page(client, suite, report).content.decode(), FLAKY)
    link = re.search(r'<a class="button small" href="([^"]+)">Quarantine<span', row)
    assert link is not None
    href = htmllib.unescape(link.group(1))
    parts = urlsplit(href)
    assert parts.path == reverse("entry_new", args=[suite.slug])
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    position = re.search(r'<tr id="m(\d+)"', row).group(1)
    report_url = "http://testserver" + reverse("report", args=[suite.slug, report.pk])
    assert query == {"node": FLAKY, "n": "200", "fails": "5", "upper95": "0.0537",
                     "seed_base": "9137", "evidence": f"{report_url}#m{position}"}
    form = client.get(href).content.decode()
    assert f'value="{FLAKY}"' in form and 'name="seed_base" value="9137"' in form
    assert f'name="evidence" value="{report_url}#m{position}"' in form


def test_a_tier_zero_row_says_why_it_cannot_be_quarantined(client_for, owner, suite, report):
    row = row_html(page(client_for(owner), suite, report).content.decode(), PROPERTY)
    assert "Tier 0 by the rule <code>tests/test_properties.py::*</code>" in row
    assert "cannot be quarantined" in row and "Quarantine</a>" not in row


def test_viewers_get_no_quarantine_action(client_for, viewer, suite, report):
    html = page(client_for(viewer), suite, report).content.decode()
    assert reverse("entry_new", args=[suite.slug]) not in html


def test_filter_by_status_over_htmx(client_for, viewer, suite, report):
    response = page(client_for(viewer), suite, report, status="WARN")
    assert re.findall(r'<tr id="m\d+" class="status-(\w+)"', response.content.decode()) == [
        "warn"]
    partial = client_for(viewer).get(reverse("report", args=[suite.slug, report.pk]),
                                     {"status": "FAIL"}, headers=HTMX)
    assert b"<html" not in partial.content
    assert len(re.findall(rb'<tr id="m\d+"', partial.content)) == 2


def test_an_empty_report_says_it_is_never_a_pass(client_for, viewer, suite):
    empty = report_ingest(suite=suite, body=body([]), actor="ci").upload
    html = page(client_for(viewer), suite, empty).content.decode()
    assert "an empty sample is never a pass" in html and "no_evidence" in html


@pytest.mark.parametrize("size", [5, 150])
def test_the_report_pages_make_a_bounded_number_of_queries(
    client_for, owner, suite, today, size, django_assert_max_num_queries
):
    tier_rule_add(suite=suite, glob="tests/test_many.py::test_00*", tier=1, actor="@lea")
    rows = [measurement(f"tests/test_many.py::test_{i:03}", fails=i % 3) for i in range(size)]
    report = report_ingest(suite=suite, body=body(rows), actor="ci").upload
    client = client_for(owner)
    # 12, and the diagnosis of the page's flaky rows: at most 4 (board.diagnosis).
    with django_assert_max_num_queries(16):
        response = page(client, suite, report)
    assert len(re.findall(r'<tr id="m\d+"', response.content.decode())) == min(size, 100)
    with django_assert_max_num_queries(12):
        client.get(reverse("reports", args=[suite.slug]))


# --- summary, reason filter, page sizes ---------------------------------------------


def shown(html) -> list[tuple[str, str]]:
    """Each row's status and reason, in page order."""
    return re.findall(r'<tr id="m\d+" class="status-(\w+)">.*?<code class="reason">(\w+)</code>',
                      html, re.S)


def test_the_summary_counts_each_status_and_links_to_its_rows(client_for, viewer, suite,
                                                               report):
    client = client_for(viewer)
    html = page(client, suite, report).content.decode()
    assert upload_summary(html, "status") == [("FAIL", "2"), ("WARN", "1"), ("OK", "40")]
    failing = page(client, suite, report, status="FAIL").content.decode()
    assert [status for status, _ in shown(failing)] == ["fail", "fail"]
    assert '<a href="?status=FAIL" aria-current="true">' in failing


def test_the_reason_filter_offers_the_reasons_present_with_their_counts(client_for, viewer,
                                                                        suite, report):
    client = client_for(viewer)
    html = page(client, suite, report).content.decode()
    counts = report.measurements.values_list("reason", flat=True)
    offered = dict(re.findall(r'<option value="(\w+)">\1 \((\d+)\)</option>', html))
    assert offered == {reason: str(list(counts).count(reason)) for reason in set(counts)}
    quarantined = page(client, suite, report, reason="quarantined").content.decode()
    assert shown(quarantined) == [("warn", "quarantined")]
    assert "1 measurement for <code>quarantined</code>" in quarantined
    both = page(client, suite, report, status="OK", reason="quarantined").content.decode()
    assert shown(both) == [] and "No measurement matches these filters." in both


@pytest.mark.parametrize(("per_page", "rows"), [("25", 25), ("100", 100), ("500", 130),
                                                ("501", 100), ("0", 100), ("lots", 100)])
def test_page_sizes_go_up_to_500_and_others_are_the_default(client_for, viewer, suite,
                                                            per_page, rows):
    many = report_ingest(suite=suite, body=body(clean_rows(130)), actor="ci").upload
    response = page(client_for(viewer), suite, many, per_page=per_page)
    assert response.status_code == 200
    html = response.content.decode()
    assert len(shown(html)) == rows
    assert '<select name="per_page" id="id_per_page">' in html
    if rows < 130:  # the next page keeps the size
        assert f"per_page={per_page}&amp;page=2" in html


def test_node_ids_break_after_colons_and_slashes(client_for, viewer, suite, report):
    row = row_html(page(client_for(viewer), suite, report).content.decode(), FLAKY)
    assert "<code>tests/<wbr>test_pay.py::<wbr>test_refund_retry</code>" in row


SEEDED = {"seeds": [9141], "controls": [9137], "seed_runs": 2, "seed_fails": 2,
          "control_runs": 2, "control_fails": 0,
          "command": f"python3 flakeboard_ci.py replay '{FLAKY}' --seed 9141"}


def test_a_flaky_row_says_why_and_links_to_its_diagnosis(client_for, viewer, suite):
    stable = "tests/test_pay.py::test_stable"
    report = report_ingest(suite=suite, actor="ci", body=body([
        {**measurement(FLAKY, n=100, fails=5, classification="flaky"),
         "experiments": {"seeded": SEEDED}},
        measurement(PROPERTY, n=100, fails=3),  # failed runs, no experiment: unknown
        measurement(stable, n=200, fails=0, classification="stable"),
    ])).upload
    html = page(client_for(viewer), suite, report).content.decode()
    flaky = row_html(html, FLAKY)
    assert "why flaky: <span class=\"badge category c-seeded\">Random input</span>" in flaky
    assert "#diagnosis-heading" in flaky
    assert "why flaky: <span class=\"badge category c-unknown\">Unknown</span>" in row_html(
        html, PROPERTY)
    assert "why flaky" not in row_html(html, stable)  # a stable row needs none
