"""A patch's page (SPEC 2.4a, issue 29 item 5): each commit of the patch, newest first, its
attempts in order with what each sent and the verdict it answered, and the nodes that
flipped there; linked from the verdicts list, the batch page and the upload's answer."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from django.urls import resolve, reverse
from django.utils.html import escape

from runs.ingest import signals_ingest
from runs.patches import ATTEMPTS_SHOWN, COMMITS_PER_PAGE, FLIPS_SHOWN
from tests.helpers import body, node_page, record

A, B = "tests/p.py::test_a", "tests/p.py::test_b"
PATCH = "feature/retry-#311"
# Names a browser or a router would bend: dot segments, a query, a fragment, escapes,
# slashes at either end, spaces within (a name is read trimmed), markup, and text beyond ASCII.
HOSTILE = [
    "a/../b", "..", ".", "./x", "x/.", "...", "100%", "%2e%2e/%2F", "x?y=1#z", "/lead",
    "trail/", "a//b", "spaced  out", "a\\..\\b", "<b>bold</b>&amp;", "ünïcødé/✓ 🚀",
    "+plus;semi,comma=eq@at:colon~", "'quoted\"",
]


def at(days_ago: int, hour: int = 12) -> datetime:
    return datetime.now(UTC).replace(hour=hour, minute=0, second=0, microsecond=0) - timedelta(
        days=days_ago)


RUNS = itertools.count()


def upload(suite, records, *, patch=PATCH, commit="c1", when=None, evidence=None):
    """A batch; its evidence names a new CI run unless given, so that no body repeats (a
    repeated body is stored once)."""
    evidence = f"ci/run-{next(RUNS)}" if evidence is None else evidence
    return signals_ingest(suite=suite, actor="ci", now=when or at(0), body=body(
        {"patch": patch, "commit": commit, "evidence": evidence, "records": records})).upload


def patch_page(suite, patch=PATCH) -> str:
    return reverse("patch", args=[suite.slug, patch])


@pytest.fixture
def history(suite):
    """Commit c1: a REJECT, then a green retry (A flips), then a retry that leaves B out.
    Commit c2, a day later: one clean attempt."""
    first = upload(suite, [record(A, "fail"), record(B)], when=at(2, 9),
                   evidence="https://ci.example/runs/1")
    second = upload(suite, [record(A), record(B, "not_run")], when=at(2, 10),
                    evidence="ci/run-2")
    third = upload(suite, [record(A)], when=at(2, 11), evidence="")
    later = upload(suite, [record(A), record(B)], commit="c2", when=at(1))
    return {"c1": [first, second, third], "c2": [later]}


def sections(html: str) -> list[str]:
    return re.findall(r'<section class="card patch-commit".*?</section>', html, re.S)


def attempt_rows(section: str) -> list[str]:
    return re.findall(r"<tr(?: class=\"status-fail\")?>\s*<th scope=\"row\".*?</tr>", section,
                      re.S)


def cells(row: str) -> list[str]:
    texts = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
    return [" ".join(re.sub(r"<[^>]+>", " ", text).split()) for text in texts]


# --- what it shows ------------------------------------------------------------------------


def test_each_commit_newest_first_with_its_attempts_in_order(client_for, viewer, suite,
                                                             history):
    response = client_for(viewer).get(patch_page(suite))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Patch <code class=\"patch-name\">feature/retry-#311</code>" in html
    newer, older = sections(html)
    assert "Commit <code>c2</code>" in newer and "Commit <code>c1</code>" in older
    assert '<span class="badge v-accept">ACCEPT</span></h2>' in newer
    assert '<span class="badge v-reject">REJECT</span></h2>' in older
    assert "3 attempts: the latest answered REJECT over all of them." in older
    rows = attempt_rows(older)
    for row, batch in zip(rows, history["c1"], strict=True):
        url = reverse("batch", args=[suite.slug, batch.pk])
        assert f'<a href="{url}">attempt {batch.attempt}</a>' in row
        assert batch.created_at.strftime("%Y-%m-%d %H:%M") in row
    # attempt, merged verdict, passed, failed, not run, left out (as sent), uploaded, by,
    # evidence
    assert [cells(row)[1:6] + cells(row)[7:] for row in rows] == [
        ["REJECT property_fail", "1", "1", "0", "0", "ci", "https://ci.example/runs/1"],
        ["REJECT property_fail", "1", "0", "1", "0", "ci", "ci/run-2"],
        ["REJECT property_fail", "1", "0", "0", "1", "ci", "—"],
    ]
    assert '<a href="https://ci.example/runs/1"' in rows[0]  # http(s) evidence links
    assert '<code title="ci/run-2">ci/run-2</code>' in rows[1]


def test_the_nodes_that_flipped_at_a_commit_link_their_pages(client_for, viewer, suite,
                                                            history):
    newer, older = sections(client_for(viewer).get(patch_page(suite)).content.decode())
    assert "1 node flipped at this commit: flaky evidence" in older
    assert "A retry will not change the verdict" in older
    flips = re.search(r'<ul class="node-list">(.*?)</ul>', older, re.S).group(1)
    assert re.findall(r'href="([^"]+)"', flips) == [node_page(suite.slug, A)]
    assert "flipped in attempt 2" in flips
    assert "flipped" not in newer


def test_uploads_without_a_commit_are_each_their_own(client_for, viewer, suite):
    for run in range(2):
        upload(suite, [record(A, "fail" if run else "pass")], commit="", when=at(0, 8 + run))
    (only,) = sections(client_for(viewer).get(patch_page(suite)).content.decode())
    assert "Without a commit" in only and "2 uploads without a commit" in only
    assert [cells(row)[1] for row in attempt_rows(only)] == [
        "ACCEPT clean", "REJECT property_fail"]
    assert "flipped" not in only


# --- names a browser would bend ---------------------------------------------------------


@pytest.mark.parametrize("patch", HOSTILE)
def test_a_hostile_patch_name_round_trips_and_its_page_shows_it_as_text(
        client_for, viewer, suite, patch):
    batch = upload(suite, [record(A, "fail")], patch=patch)
    url = patch_page(suite, patch)
    # No dot segment, query or fragment that a browser would resolve or cut.
    assert urlsplit(urljoin("https://board.example/", url)).path == url
    assert "?" not in url and "#" not in url
    # The server decodes the path once before it routes it.
    assert resolve(unquote(url)).kwargs == {"suite": suite.slug, "patch": patch}
    client = client_for(viewer)
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<b>bold" not in html
    assert f'<a href="{reverse("batch", args=[suite.slug, batch.pk])}">attempt 1</a>' in html
    escaped = response.context["patch"]
    assert escaped == patch
    # The verdicts list and the batch page link the same address.
    link = f'href="{escape(url)}"'
    assert link in client.get(reverse("verdicts", args=[suite.slug])).content.decode()
    assert link in client.get(reverse("batch", args=[suite.slug, batch.pk])).content.decode()


def test_a_patch_is_its_own_name_not_one_that_resolves_alike(client_for, viewer, suite):
    upload(suite, [record(A, "fail")], patch="b")
    upload(suite, [record(A)], patch="a/../b")
    client = client_for(viewer)
    for patch, verdict in (("b", "REJECT"), ("a/../b", "ACCEPT")):
        (only,) = sections(client.get(patch_page(suite, patch)).content.decode())
        assert f'<span class="badge v-{verdict.lower()}">{verdict}</span></h2>' in only


# --- no page: unknown names, outsiders ----------------------------------------------------


@pytest.mark.parametrize("path", [
    "patches/no-such-patch/", "patches/feature/retry-%2523312/",
    "patches/nul%2500byte/", "patches/tab%09/", "patches/" + "x" * 201 + "/",
])
def test_an_unknown_or_impossible_patch_is_the_boards_404(client_for, viewer, suite, history,
                                                        path):
    response = client_for(viewer).get(f"/suites/{suite.slug}/{path}")
    assert response.status_code == 404
    html = response.content.decode()
    assert "There is nothing at this address" in html
    assert f'href="{reverse("overview", args=[suite.slug])}"' in html  # the suites you have


def test_another_suites_patch_is_not_found_and_outsiders_and_the_signed_out_get_what_they_do(
        client_for, viewer, outsider, other_suite, suite, history):
    upload(other_suite, [record(A)], patch="theirs")
    assert client_for(viewer).get(patch_page(suite, "theirs")).status_code == 404
    assert client_for(outsider).get(patch_page(suite)).status_code == 404
    signed_out = client_for(None).get(patch_page(suite))
    assert signed_out.status_code == 302
    assert signed_out["Location"].startswith(reverse("login"))


# --- long patches: paged, capped, in a fixed number of queries -----------------------------


def test_many_commits_are_paged_newest_first(client_for, viewer, suite):
    total = COMMITS_PER_PAGE + 2
    for i in range(total):
        upload(suite, [record(A)], commit=f"c{i:02}", when=at(0, 0) + timedelta(minutes=i))
    client = client_for(viewer)
    first = client.get(patch_page(suite)).content.decode()
    assert f"{total} commits, newest first; 1\u2013{COMMITS_PER_PAGE} shown." in first
    assert re.findall(r"Commit <code>(c\d+)</code>", first)[:2] == [
        f"c{total - 1:02}", f"c{total - 2:02}"]
    second = client.get(patch_page(suite), {"page": 2}).content.decode()
    assert re.findall(r"Commit <code>(c\d+)</code>", second) == ["c01", "c00"]
    swapped = client.get(patch_page(suite), {"page": 2}, headers={"HX-Request": "true"})
    assert b"<html" not in swapped.content and b"Commit <code>c00</code>" in swapped.content


def test_a_commit_with_very_many_attempts_shows_the_first_ones_and_the_latest(
        client_for, viewer, suite):
    total = ATTEMPTS_SHOWN + 3
    batches = [upload(suite, [record(A, "fail" if i == 0 else "pass")],
                      when=at(0, 0) + timedelta(minutes=i)) for i in range(total)]
    (only,) = sections(client_for(viewer).get(patch_page(suite)).content.decode())
    shown = re.findall(r">attempt (\d+)</a>", only)
    assert shown == [str(i) for i in range(1, ATTEMPTS_SHOWN + 1)] + [str(total)]
    assert "… 2 more attempts" in only
    assert f'href="{reverse("batch", args=[suite.slug, batches[-1].pk])}"' in only


def test_very_many_flips_are_cut_and_counted(client_for, viewer, suite):
    nodes = [f"t.py::t{i:03}" for i in range(FLIPS_SHOWN + 5)]
    # As many nodes pass beside them: not a broken runner's attempt, which flips nothing.
    steady = [record(f"t.py::ok{i:03}") for i in range(FLIPS_SHOWN + 5)]
    upload(suite, [record(n, "fail") for n in nodes] + steady, when=at(0, 1))
    latest = upload(suite, [record(n) for n in nodes] + steady, when=at(0, 2))
    (only,) = sections(client_for(viewer).get(patch_page(suite)).content.decode())
    assert f"{FLIPS_SHOWN + 5} nodes flipped at this commit" in only
    assert only.count("flipped in attempt 2") == FLIPS_SHOWN
    assert (f'The first {FLIPS_SHOWN}; <a href="{reverse("batch", args=[suite.slug, latest.pk])}">'
            f"the latest attempt's page</a> lists all {FLIPS_SHOWN + 5}.") in only


@pytest.mark.parametrize("commits", [1, COMMITS_PER_PAGE + 3])
def test_the_page_makes_a_bounded_number_of_queries(client_for, viewer, suite, commits,
                                                    django_assert_max_num_queries):
    for i in range(commits):
        for run in range(3):
            upload(suite, [record(A, "fail" if run == 0 else "pass"), record(B)],
                   commit=f"c{i}", when=at(0, 0) + timedelta(minutes=3 * i + run))
    client = client_for(viewer)
    with django_assert_max_num_queries(10):
        response = client.get(patch_page(suite))
    assert response.content.decode().count("node flipped at this commit") == min(
        commits, COMMITS_PER_PAGE)


# --- links to it ---------------------------------------------------------------------------


def test_the_verdicts_list_and_the_batch_page_link_the_patch(client_for, viewer, suite,
                                                             history):
    client = client_for(viewer)
    url = patch_page(suite)
    listed = client.get(reverse("verdicts", args=[suite.slug])).content.decode()
    assert listed.count(f'<a href="{url}" title="{PATCH}">{PATCH}</a>') == 4
    batch = history["c1"][0]
    page = client.get(reverse("batch", args=[suite.slug, batch.pk])).content.decode()
    assert f'<dt>Patch</dt><dd><a href="{url}">{PATCH}</a>' in page


def test_a_batch_without_a_patch_links_no_patch_page(client_for, viewer, suite):
    batch = signals_ingest(suite=suite, actor="ci", body=body([record(A)])).upload
    client = client_for(viewer)
    page = client.get(reverse("batch", args=[suite.slug, batch.pk])).content.decode()
    assert "<dt>Patch</dt><dd>—</dd>" in page
    assert "/patches/" not in client.get(reverse("verdicts", args=[suite.slug])).content.decode()


def test_the_upload_answer_gives_the_patch_page(board, suite, token):
    def send(patch, query=None):
        return board.verdicts(suite.slug, token, body(
            {"patch": patch, "commit": "c1", "records": [record(A)]}), query=query).json

    hostile = "a/../b #1"
    assert send(hostile, {"dry_run": "true"})["patch_url"] is None  # nothing stored yet
    stored = send(hostile)
    assert stored["patch_url"] == board.url + patch_page(suite, hostile)
    assert send(hostile, {"dry_run": "true"})["patch_url"] == stored["patch_url"]
    assert send("")["patch_url"] is None
    again = board.get(f"/api/v1/suites/{suite.slug}/verdicts/{stored['id']}", token=token).json
    assert again["patch_url"] == stored["patch_url"]
    # The address the answer gives is the page, for a member of the suite.
    assert resolve(unquote(urlsplit(stored["patch_url"]).path)).kwargs["patch"] == hostile
