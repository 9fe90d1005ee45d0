"""The real node-id corpus: node ids collected from the test suites of click, jinja2 and
packaging (tests/corpus/nodeids/, see its README), uploaded whole as a flake report and as
signal records. Every id is stored and read back exactly (the API's answers, the served
ledger) and every id's node page is reached by following the link the report page gives it,
whatever the id holds: brackets, dots, ``//``, ``?``, ``#``, ``%``, backslashes, spaces,
line and paragraph separators, characters outside the BMP.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils.html import escape

from flakeboard import rules
from ledger.ledger_file import import_ledger
from ledger.models import Node
from ledger.tokens import token_create
from runs.models import Measurement, NodeVerdict
from tests.helpers import body, measurement, record
from tests.html_links import node_links

NODEIDS = Path(__file__).parent / "corpus" / "nodeids"
PROJECTS = ("click", "jinja2", "packaging")


def read_ids(name: str) -> list[str]:
    """One id a line. Split on line feeds only: an id may hold U+2028 or U+2029, which
    str.splitlines() would take for line ends."""
    text = (NODEIDS / f"{name}.txt").read_text(encoding="utf-8")
    assert text.endswith("\n")
    return text[:-1].split("\n")


CORPUS = {name: read_ids(name) for name in (*PROJECTS, "unescaped")}
ALL_IDS = [nodeid for ids in CORPUS.values() for nodeid in ids]
# What the corpus promises to hold somewhere, each one a way to break a URL, a page or a key.
MARKERS = {
    "dots": "..", "double slash": "//", "query": "?", "fragment": "#", "percent": "%",
    "backslash": "\\", "space": " ", "brackets": "[", "line separator": "\u2028",
    "paragraph separator": "\u2029",
}
URL_MARKERS = ("..", "//", "?", "#", "%", "\\", " ")


def _awkward_sample(per_marker: int = 4) -> list[str]:
    """A quick run's share of the corpus: each project's first few ids with each
    character a URL treats specially, and every non-ASCII id."""
    chosen = dict.fromkeys(CORPUS["unescaped"])
    for name in PROJECTS:
        for marker in URL_MARKERS:
            chosen.update(dict.fromkeys([n for n in CORPUS[name] if marker in n][:per_marker]))
    return list(chosen)


SAMPLE = _awkward_sample()


def test_the_corpus_is_real_node_ids_with_every_awkward_character():
    for name, ids in CORPUS.items():
        assert len(ids) >= (30 if name == "unescaped" else 200), name
        assert all("::" in nodeid for nodeid in ids), name
    assert len(set(ALL_IDS)) == len(ALL_IDS), "an id twice: one upload would refuse it"
    assert [nodeid for nodeid in ALL_IDS if rules.nodeid_problem(nodeid)] == []
    for what, marker in MARKERS.items():
        assert any(marker in nodeid for nodeid in ALL_IDS), what
    assert any(any(ord(c) > 0xFFFF for c in nodeid) for nodeid in ALL_IDS), "a 4-byte char"
    # pytest escapes ids as it prints them: the non-ASCII ones are the unescaped file's.
    assert all(nodeid.isascii() for name in PROJECTS for nodeid in CORPUS[name])
    assert not any(nodeid.isascii() for nodeid in CORPUS["unescaped"])


@pytest.fixture
def api(suite):
    raw = token_create(suite=suite, scope="write", actor="@lea", name="corpus")[1]
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def _upload(api, suite, kind: str, data) -> dict:
    response = api.post(f"/api/v1/suites/{suite.slug}/{kind}", data=body(data),
                        content_type="application/json")
    assert response.status_code == 201, response.content[:500]
    return response.json()


def _report_links(api, suite, client) -> dict[str, str]:
    """Uploads the whole corpus as a report; answers each id's node link on its page."""
    answer = _upload(api, suite, "reports", {"measurements": [measurement(n) for n in ALL_IDS]})
    assert [row["nodeid"] for row in answer["measurements"]] == ALL_IDS
    stored = Measurement.objects.filter(report_id=answer["id"]).values_list("node__nodeid",
                                                                          flat=True)
    assert sorted(stored) == sorted(ALL_IDS)
    links = node_links(client, answer["url"])
    assert sorted(links) == sorted(ALL_IDS)
    assert len(set(links.values())) == len(ALL_IDS), "two ids share a node page"
    return links


def _reach(client, links: dict[str, str], nodeids: list[str]) -> None:
    for nodeid in nodeids:
        page = client.get(links[nodeid])
        assert page.status_code == 200, (nodeid, links[nodeid])
        assert escape(nodeid) in page.content.decode(), (nodeid, links[nodeid])


def _import_and_serve(api, suite, today, nodeids: list[str]) -> None:
    """Quarantines every id through the import, then reads the served ledger back."""
    rows = [(nodeid, {"class": "flake", "n": 200, "fails": 3, "owner": "@finley",
                      "expires": (today + timedelta(days=10)).isoformat(),
                      "evidence": "ci/run-1"}) for nodeid in nodeids]
    outcome = import_ledger(suite=suite, pairs=rows, actor="corpus", today=today)
    assert outcome.refused == [] and outcome.stored

    response = api.get(f"/api/v1/suites/{suite.slug}/ledger")
    assert response.status_code == 200
    # Parsed from the bytes, not response.json(): the ids must survive the wire's encoding.
    served = json.loads(response.content.decode("utf-8"))
    assert sorted(served) == sorted(nodeids)
    full = api.get(f"/api/v1/suites/{suite.slug}/ledger?view=full").json()
    assert sorted(entry["node"] for entry in full["entries"]) == sorted(nodeids)


@pytest.mark.slow
def test_a_report_of_the_whole_corpus_links_each_id_to_its_own_page(
    api, suite, client_for, viewer
):
    client = client_for(viewer)
    _reach(client, _report_links(api, suite, client), SAMPLE)


@pytest.mark.slow
def test_signal_records_of_the_whole_corpus_are_stored_exactly(api, suite, client_for, viewer):
    client = client_for(viewer)
    report_links = _report_links(api, suite, client)
    answer = _upload(api, suite, "verdicts", {"records": [record(n) for n in ALL_IDS]})
    assert [row["node"] for row in answer["records"]] == ALL_IDS
    assert {row["verdict"] for row in answer["records"]} == {"accept"}
    stored = NodeVerdict.objects.filter(batch_id=answer["id"]).values_list("node__nodeid",
                                                                         flat=True)
    assert sorted(stored) == sorted(ALL_IDS)
    # One node each, shared by the report and the batch: found by the same id both times.
    assert Node.objects.filter(suite=suite).count() == len(ALL_IDS)
    assert node_links(client, answer["url"]) == report_links


def test_the_served_ledger_holds_corpus_ids_exactly(api, suite, today):
    _import_and_serve(api, suite, today, SAMPLE)


@pytest.mark.slow
def test_every_corpus_id_is_served_and_reached(api, suite, client_for, viewer, today):
    """The quick tests above take a sample of the node pages and of the ledger; this one
    walks every id of the corpus."""
    client = client_for(viewer)
    _reach(client, _report_links(api, suite, client), ALL_IDS)
    _import_and_serve(api, suite, today, ALL_IDS)
