"""The verdict batches list and a batch's page: the aggregate verdict and its reason, counts
by reason code, and the per-node precedence table with its filters."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse

from flakeboard import rules
from ledger.quarantine import quarantine_create
from runs.ingest import report_ingest, signals_ingest
from tests.helpers import body, measurement, record, upload_summary
from tests.world import module_world

HTMX = {"HX-Request": "true"}


def add_batch(suite, today):
    suite.fixture_manifest, suite.fixture_seed = "sha256:feed", 7
    suite.save()
    report_ingest(suite=suite, body=body([measurement(f"t.py::t{i}") for i in range(40)]),
                  actor="ci")
    quarantine_create(suite=suite, nodeid="t.py::frozen", owner="@sam", evidence="ci/run-1",
                      expires=today + timedelta(days=9), actor="@sam", today=today)
    pinned = {"fixture_manifest": "sha256:feed", "seed": 7}
    records = [
        record("t.py::clean", **pinned),
        record("t.py::fails", prop="fail", **pinned),
        record("t.py::not_run", prop="not_run", **pinned),
        record("t.py::drifted", fixture_manifest="sha256:01d", seed=7),  # claims match
        record("t.py::frozen", **pinned),  # the ledger freezes it
        record("t.py::frozen_forever", status="frozen", **pinned),
    ]
    return signals_ingest(suite=suite, body=body({"records": records, "patch": "patch-42",
                                                  "commit": "c0ffee"}), actor="ci").upload


build_world, batch = module_world("batch", add_batch)


def rows(html) -> dict[str, str]:
    found = re.findall(r"<tr>\s*<td class=\"node\">.*?<code>(.*?)</code>.*?</tr>", html, re.S)
    bodies = re.findall(r"<tr>\s*<td class=\"node\">.*?</tr>", html, re.S)
    return dict(zip((nodeid.replace("<wbr>", "") for nodeid in found), bodies, strict=True))


def page(client, suite, batch, headers=None, **params):
    return client.get(reverse("batch", args=[suite.slug, batch.pk]), params, headers=headers)


def test_verdicts_list_and_its_filter(client_for, viewer, suite, batch):
    client = client_for(viewer)
    html = client.get(reverse("verdicts", args=[suite.slug])).content.decode()
    assert f'href="{reverse("batch", args=[suite.slug, batch.pk])}"' in html
    assert '<span class="badge v-reject">REJECT</span>' in html and "patch-42" in html
    accepted = client.get(reverse("verdicts", args=[suite.slug]), {"verdict": "accept"})
    assert b"No batch with verdict ACCEPT" in accepted.content


def test_aggregate_verdict_reason_and_counts(client_for, viewer, suite, batch):
    html = page(client_for(viewer), suite, batch).content.decode()
    verdict = '<span class="badge v-reject">REJECT</span> <code class="reason">property_fail</code>'
    assert verdict in html
    assert "exit 1" in html
    counts = html[html.index('id="counts-heading"'):html.index('id="table-heading"')]
    found = dict(re.findall(r'<code class="reason">(\w+)</code></a></td><td class="num">(\d+)',
                            counts))
    assert found == {"clean": "1", "property_fail": "1", "property_not_run": "1",
                     "fixture_drifted": "1", "frozen_node": "2"}


def test_precedence_table_shows_signals_effective_verdict_reason_flags(
    client_for, viewer, suite, batch
):
    table = rows(page(client_for(viewer), suite, batch).content.decode())
    assert len(table) == 6
    drifted = table["t.py::drifted"]
    assert re.search(r"<td>pass</td>\s*<td>match</td>\s*<td>stable", drifted)
    assert '<td class="eff changed">drifted</td>' in drifted
    assert "HOLD" in drifted and "fixture_drifted" in drifted
    frozen = table["t.py::frozen"]
    assert '<td class="eff changed">frozen</td>' in frozen and "ledger_disagrees" in frozen
    assert "freeze_without_expiry" in table["t.py::frozen_forever"]
    assert "REJECT" in table["t.py::fails"] and "property_fail" in table["t.py::fails"]
    assert "ACCEPT" in table["t.py::clean"] and '<span class="muted">—</span>' in table[
        "t.py::clean"]


@pytest.mark.parametrize(("params", "expected"), [
    ({"verdict": "hold"}, {"t.py::not_run", "t.py::drifted", "t.py::frozen",
                           "t.py::frozen_forever"}),
    ({"reason": "frozen_node"}, {"t.py::frozen", "t.py::frozen_forever"}),
    ({"verdict": "hold", "reason": "property_not_run"}, {"t.py::not_run"}),
    ({"verdict": "accept", "reason": "property_fail"}, set()),
    ({"verdict": "bogus"}, {"t.py::clean", "t.py::fails", "t.py::not_run", "t.py::drifted",
                            "t.py::frozen", "t.py::frozen_forever"}),
])
def test_filter_by_verdict_and_reason(client_for, viewer, suite, batch, params, expected):
    assert set(rows(page(client_for(viewer), suite, batch, **params).content.decode())) == expected


def test_filters_answer_htmx_with_the_table(client_for, viewer, suite, batch):
    response = page(client_for(viewer), suite, batch, headers=HTMX, verdict="reject")
    assert b"<html" not in response.content
    assert set(rows(response.content.decode())) == {"t.py::fails"}
    assert "HX-Request" in response["Vary"]


def test_an_empty_batch_holds_for_no_evidence(client_for, viewer, suite):
    empty = signals_ingest(suite=suite, body=body([]), actor="ci").upload
    html = page(client_for(viewer), suite, empty).content.decode()
    assert "HOLD" in html and "no_evidence" in html and "with no evidence the batch holds" in html


@pytest.mark.parametrize("size", [4, 160])
def test_the_batch_pages_make_a_bounded_number_of_queries(
    client_for, viewer, suite, size, django_assert_max_num_queries
):
    records = [record(f"t.py::t{i}", prop=("pass", "fail", "not_run")[i % 3]) for i in range(size)]
    batch = signals_ingest(suite=suite, body=body(records), actor="ci").upload
    client = client_for(viewer)
    with django_assert_max_num_queries(12):
        response = page(client, suite, batch)
    assert len(rows(response.content.decode())) == min(size, 100)
    with django_assert_max_num_queries(12):
        client.get(reverse("verdicts", args=[suite.slug]))


# --- precedence order, summary, page sizes -----------------------------------------


def test_rows_are_in_the_arbiters_precedence_order_then_as_uploaded(client_for, viewer, suite,
                                                                     batch):
    html = page(client_for(viewer), suite, batch).content.decode()
    assert list(rows(html)) == ["t.py::drifted", "t.py::frozen", "t.py::frozen_forever",
                                "t.py::fails", "t.py::not_run", "t.py::clean"]
    reasons = re.findall(r'<td><code class="reason">(\w+)</code>', html)
    ranks = [rules.PRECEDENCE_ORDER.index(rules.Reason(reason)) for reason in reasons]
    assert ranks == sorted(ranks)


def test_the_precedence_order_is_the_arbiters_table():
    """The order the page uses is read from the table ``arbitrate`` applies."""
    assert rules.PRECEDENCE_ORDER == (
        rules.Reason.FIXTURE_DRIFTED, rules.Reason.FIXTURE_MISSING, rules.Reason.FROZEN_NODE,
        rules.Reason.PROPERTY_FAIL, rules.Reason.PROPERTY_NOT_RUN, rules.Reason.CLEAN)


def test_the_summary_counts_each_verdict_and_links_to_its_records(client_for, viewer, suite,
                                                                   batch):
    client = client_for(viewer)
    html = page(client, suite, batch).content.decode()
    assert upload_summary(html, "verdict") == [("reject", "1"), ("hold", "4"), ("accept", "1")]
    held = page(client, suite, batch, verdict="hold", per_page="25").content.decode()
    assert len(rows(held)) == 4
    assert '<a href="?verdict=hold&amp;per_page=25" aria-current="true">' in held


@pytest.mark.parametrize(("per_page", "shown"), [("25", 25), ("500", 130), ("501", 100)])
def test_page_sizes_go_up_to_500(client_for, viewer, suite, per_page, shown):
    batch = signals_ingest(suite=suite, actor="ci", body=body(
        [record(f"t.py::t{i}") for i in range(130)])).upload
    response = page(client_for(viewer), suite, batch, per_page=per_page)
    assert response.status_code == 200
    assert len(rows(response.content.decode())) == shown
