"""Node ids, owners, evidence and notes are hostile input: every page renders them as inert
text, and only http(s) evidence becomes a link."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse

from ledger.models import QuarantineEntry
from ledger.quarantine import quarantine_clear, quarantine_create
from runs.ingest import report_ingest, signals_ingest
from tests.helpers import body, measurement, node_page, record, suite_pages

NODE = "tests/x.py::test_<script>alert(1)</script>[\"'q]"
SCRIPT_NOTE = "<script>alert(4)</script> & \"quoted\" 'single'"
HOSTILE_OWNER = "<script>alert(5)</script>\"'"
EVIDENCE = {
    "javascript": "javascript:alert(2)",
    "markup": "\"><script>alert(3)</script>",
    "attribute": "https://evil.example/\"onmouseover=\"alert(6)",
}


@pytest.fixture
def hostile(suite, today):
    others = [measurement(f"t.py::t{i}") for i in range(100)]
    report = report_ingest(suite=suite, actor="ci", body=body({
        "measurements": [*others, measurement(NODE, fails=9),
                         measurement("t.py::js", fails=9), measurement("t.py::attr", fails=9)],
        "commit": "<b>c0ffee</b>", "branch": "<i>main</i>", "evidence": "javascript:alert(7)",
    })).upload
    batch = signals_ingest(suite=suite, actor="ci", body=body({
        "records": [record(NODE, prop="fail")], "patch": "<script>alert(8)</script>",
        "evidence": "javascript:alert(9)",
    })).upload
    kw = {"suite": suite, "actor": "@finley", "today": today, "owner": "@finley",
          "expires": today + timedelta(days=9)}
    entries = {
        "markup": quarantine_create(nodeid=NODE, evidence=EVIDENCE["markup"], note=SCRIPT_NOTE,
                                    **kw),
        "javascript": quarantine_create(nodeid="t.py::js", evidence=EVIDENCE["javascript"], **kw),
        "attribute": quarantine_create(nodeid="t.py::attr", evidence=EVIDENCE["attribute"],
                                       **kw),
    }
    cleared = quarantine_create(nodeid="t.py::t1", evidence="ci/run-1", **kw)
    quarantine_clear(entry=cleared, note=SCRIPT_NOTE, actor="@finley")
    # An owner no form accepts, as a legacy row might hold it.
    QuarantineEntry.objects.filter(pk=entries["javascript"].pk).update(owner=HOSTILE_OWNER)
    return {"report": report, "batch": batch, "entries": entries, "cleared": cleared}


def urls(suite, hostile):
    """Every page of the suite, on the hostile rows; each entry's page, the cleared one's too."""
    slug, entries = suite.slug, hostile["entries"]
    pages = suite_pages(suite, entry=entries["markup"], report=hostile["report"],
                        batch=hostile["batch"], node=NODE)
    others = [*(e for name, e in entries.items() if name != "markup"), hostile["cleared"]]
    return [
        *pages.values(),
        *(reverse("entry", args=[slug, e.pk]) for e in others),
        reverse("entry_clear", args=[slug, entries["javascript"].pk]),
        node_page(slug, "t.py::t1"),
    ]


def assert_inert(html: str) -> None:
    assert "<script>alert" not in html
    assert "<b>c0ffee" not in html and "<i>main" not in html
    assert not re.search(r"""(href|src|action|hx-get|hx-post)\s*=\s*["']?\s*javascript:""",
                         html, re.I)
    assert '"onmouseover="' not in html and "\"'" not in html.replace("hx-headers='", "")


def test_every_page_renders_hostile_input_as_text(client_for, owner, suite, hostile):
    client = client_for(owner)
    for url in urls(suite, hostile):
        response = client.get(url)
        assert response.status_code == 200, url
        assert_inert(response.content.decode())


def test_htmx_partials_are_escaped_too(client_for, owner, suite, hostile):
    client = client_for(owner)
    entry = hostile["entries"]["markup"]
    for url, params in [
        (reverse("entry", args=[suite.slug, entry.pk]), {"place": "row"}),
        (reverse("entry_renew", args=[suite.slug, entry.pk]), {"place": "row"}),
        (reverse("ledger", args=[suite.slug]), {"q": "<script>"}),
        (node_page(suite.slug, NODE), {"panel": "latest"}),
    ]:
        html = client.get(url, params, headers={"HX-Request": "true"}).content.decode()
        assert_inert(html)


def test_the_escaped_text_is_shown(client_for, owner, suite, hostile):
    entry = hostile["entries"]["markup"]
    html = client_for(owner).get(reverse("entry", args=[suite.slug, entry.pk])).content.decode()
    assert "test_&lt;script&gt;alert(1)&lt;/script&gt;[&quot;&#x27;q]" in html
    note = "&lt;script&gt;alert(4)&lt;/script&gt; &amp; &quot;quoted&quot; &#x27;single&#x27;"
    assert note in html
    assert "&quot;&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in html


def test_only_http_evidence_becomes_a_link(client_for, owner, suite, hostile):
    client = client_for(owner)
    entries = hostile["entries"]
    javascript = client.get(reverse("entry", args=[suite.slug, entries["javascript"].pk]))
    as_text = '<code title="javascript:alert(2)">javascript:alert(2)</code>'
    assert as_text in javascript.content.decode()
    attribute = client.get(reverse("entry", args=[suite.slug, entries["attribute"].pk]))
    assert ('<a href="https://evil.example/&quot;onmouseover=&quot;alert(6)"'
            in attribute.content.decode())
    ledger = client.get(reverse("ledger", args=[suite.slug])).content.decode()
    assert ledger.count('<a href="https://evil.example/') == 1
    assert 'href="javascript' not in ledger and 'href="&quot;' not in ledger


def test_hostile_node_ids_get_working_urls(client_for, owner, suite, hostile):
    url = node_page(suite.slug, NODE)
    assert "<" not in url and '"' not in url
    assert client_for(owner).get(url).status_code == 200


def test_node_ids_break_at_wbr_and_stay_escaped(client_for, owner, suite, hostile):
    client = client_for(owner)
    wrapped = ("tests/<wbr>x.py::<wbr>test_&lt;script&gt;alert(1)&lt;/<wbr>script&gt;"
               "[&quot;&#x27;q]")
    for upload in ("report", "batch"):
        html = client.get(reverse(upload, args=[suite.slug, hostile[upload].pk])).content.decode()
        assert f"<code>{wrapped}</code>" in html
        assert_inert(html)
