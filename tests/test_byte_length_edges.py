"""Lengths are counted in characters, whatever their UTF-8 width: a node id, an owner, a
piece of evidence and a tier rule's glob at their limit in 1-, 2-, 3- and 4-byte characters
are taken by the pages and read back exactly, wherever they are shown; one character more
is refused beside its field, and nothing is stored.

The text is tests/wide_text.py's: characters that do not repeat, as real ids do not, so
that PostgreSQL cannot compress a value under a limit it would otherwise overflow. The
uploads' and the import's edges are cases of the bad-input corpus
(tests/test_bad_input_corpus.py, ``one_over``); the fuzzing run sends them too.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from flakeboard import rules
from ledger.models import QuarantineEntry, TierRule
from ledger.tokens import token_create
from runs.ingest import report_ingest, signals_ingest
from tests.helpers import body, field_errors, measurement, record, table_sizes
from tests.html_links import node_links
from tests.wide_text import wide

WIDTHS = (1, 2, 3, 4)
NODE_PREFIX = "tests/test_edge.py::test_limit["


def nodeid_of(width: int, length: int = rules.NODEID_MAX_LENGTH) -> str:
    return NODE_PREFIX + wide(width, length - len(NODE_PREFIX) - 1) + "]"


def owner_of(width: int, length: int = rules.OWNER_MAX_LENGTH) -> str:
    """An e-mail address: the local part (64 characters at most) in the width, the domain
    in ASCII up to ``length``."""
    return wide(width, 64) + "@" + "d" * (length - 64 - 1 - len(".test")) + ".test"


def evidence_of(width: int, length: int = rules.EVIDENCE_MAX_LENGTH) -> str:
    return "ci/run-" + wide(width, length - len("ci/run-"))


def glob_of(width: int, length: int = rules.NODEID_MAX_LENGTH) -> str:
    """A glob that matches nodeid_of(width): its first length - 1 characters, then a star."""
    return nodeid_of(width)[: length - 1] + "*"


def meta_of(width: int, length: int = rules.META_MAX_LENGTH) -> str:
    return wide(width, length)


def digest_of(length: int = rules.META_MAX_LENGTH) -> str:
    """A fixture manifest at the limit: a digest is hex, so only 1-byte characters."""
    return "sha256:" + ("9f2c" * length)[: length - len("sha256:")]


# The widest characters in every lane; the narrower widths are ``wide`` (make test and CI).
widths = pytest.mark.parametrize("width", [
    pytest.param(width, id=f"{width}byte", marks=() if width == max(WIDTHS) else pytest.mark.wide)
    for width in WIDTHS])


@widths
def test_the_values_are_as_long_as_they_say(width):
    assert len(nodeid_of(width)) == len(glob_of(width)) == rules.NODEID_MAX_LENGTH
    assert len(owner_of(width)) == rules.OWNER_MAX_LENGTH
    assert len(evidence_of(width)) == rules.EVIDENCE_MAX_LENGTH
    assert len(meta_of(width)) == len(digest_of()) == rules.META_MAX_LENGTH
    assert rules.owner_problem(owner_of(width)) is None
    assert {len(c.encode()) for c in wide(width, rules.EVIDENCE_MAX_LENGTH)} == {width}
    if width >= 3:  # too wide for a b-tree entry, unless it compresses: it must not
        assert len(set(wide(width, rules.NODEID_MAX_LENGTH))) == rules.NODEID_MAX_LENGTH


@pytest.fixture
def known(suite):
    """40 known nodes, so that one more entry stays under the share cap."""
    rows = [measurement(f"tests/test_many.py::test_{i}") for i in range(40)]
    report_ingest(suite=suite, body=body(rows), actor="ci")
    return suite


def _form(today, width, **overrides) -> dict:
    data = {"node": nodeid_of(width), "owner": owner_of(width), "evidence": evidence_of(width),
            "expires": (today + timedelta(days=14)).isoformat(), "note": "", "n": "200",
            "fails": "5", "upper95": "", "seed_base": ""}
    return {**data, **overrides}


@widths
def test_the_quarantine_form_takes_every_field_at_its_limit(client_for, owner, known, today,
                                                            width):
    data = _form(today, width)
    response = client_for(owner).post(reverse("entry_new", args=[known.slug]), data)
    assert response.status_code == 302, field_errors(response, "node") or response.content[:500]
    entry = QuarantineEntry.objects.get(suite=known)
    assert (entry.node.nodeid, entry.owner, entry.evidence) == (
        data["node"], data["owner"], data["evidence"]
    )
    page = client_for(owner).get(response["Location"]).content.decode()
    for value in (data["node"], data["owner"], data["evidence"]):
        assert escape(value) in page

    raw = token_create(suite=known, scope="read", actor="@lea")[1]
    served = Client(HTTP_AUTHORIZATION=f"Bearer {raw}").get(
        f"/api/v1/suites/{known.slug}/ledger"
    )
    row = json.loads(served.content.decode("utf-8"))[data["node"]]
    assert (row["owner"], row["evidence"]) == (data["owner"], data["evidence"])


@widths
@pytest.mark.parametrize("field", ["node", "owner", "evidence"])
def test_the_quarantine_form_refuses_one_character_more(client_for, owner, known, today,
                                                        width, field):
    longer = {"node": nodeid_of, "owner": owner_of, "evidence": evidence_of}[field]
    limit = {"node": rules.NODEID_MAX_LENGTH, "owner": rules.OWNER_MAX_LENGTH,
             "evidence": rules.EVIDENCE_MAX_LENGTH}[field]
    client = client_for(owner)
    before = table_sizes()
    response = client.post(reverse("entry_new", args=[known.slug]),
                           _form(today, width, **{field: longer(width, limit + 1)}))
    assert response.status_code == 200
    assert field_errors(response, field), response.content.decode()[:2000]
    assert table_sizes() == before


@widths
def test_a_tier_rule_takes_a_glob_at_the_limit(client_for, lead, suite, width):
    report_ingest(suite=suite, body=body([measurement(nodeid_of(width))]), actor="ci")
    client = client_for(lead)
    glob = glob_of(width)
    preview = client.get(reverse("settings_tier_rule_preview", args=[suite.slug]),
                         {"glob": glob, "tier": "0"})
    assert preview.status_code == 200
    assert escape(nodeid_of(width)) in preview.content.decode()
    response = client.post(reverse("settings_tier_rule_add", args=[suite.slug]),
                           {"glob": glob, "tier": "0"})
    assert response.status_code == 302
    assert TierRule.objects.get(suite=suite).glob == glob
    assert suite.nodes.get(nodeid=nodeid_of(width)).tier == 0
    assert escape(glob) in client.get(response["Location"]).content.decode()


@widths
def test_a_tier_rule_refuses_a_glob_one_character_longer(client_for, lead, suite, width):
    client = client_for(lead)
    glob = glob_of(width) + wide(width, 1)
    assert len(glob) == rules.NODEID_MAX_LENGTH + 1
    before = table_sizes()
    response = client.post(reverse("settings_tier_rule_add", args=[suite.slug]),
                           {"glob": glob, "tier": "0"})
    assert response.status_code == 200
    assert f"at most {rules.NODEID_MAX_LENGTH} characters" in response.content.decode()
    assert table_sizes() == before
    preview = client.get(reverse("settings_tier_rule_preview", args=[suite.slug]),
                         {"glob": glob, "tier": "0"})
    assert preview.status_code == 200


def test_ids_and_labels_at_the_limit_are_shown_and_linked_from_the_upload_pages(
    client_for, viewer, suite
):
    """The report and the batch pages show every limit-length value of their upload, and
    each node link leads to the node's own page."""
    ids = [nodeid_of(width) for width in WIDTHS]
    meta = {"commit": meta_of(4), "evidence": evidence_of(4)}
    report = report_ingest(
        suite=suite, actor="ci",
        body=body({"measurements": [measurement(n) for n in ids], "branch": meta_of(3),
                   **meta}),
    ).upload
    batch = signals_ingest(
        suite=suite, actor="ci",
        body=body({"records": [record(n, fixture_manifest=digest_of()) for n in ids],
                   "patch": meta_of(3), **meta}),
    ).upload
    client = client_for(viewer)
    pages = {}
    for name, upload in (("report", report), ("batch", batch)):
        url = reverse(name, args=[suite.slug, upload.pk])
        pages[name] = node_links(client, url)
        html = client.get(url).content.decode()
        for value in meta.values():
            assert escape(value) in html, (name, value[:20])
    assert sorted(pages["report"]) == sorted(ids)
    assert pages["batch"] == pages["report"]
    for nodeid, href in pages["report"].items():
        page = client.get(href)
        assert page.status_code == 200
        assert escape(nodeid) in page.content.decode()
