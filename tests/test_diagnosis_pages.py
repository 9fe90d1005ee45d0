"""SPEC 2.4d on the pages (issue 51): the node page's "Why it is flaky" panel (the category's
words, the evidence strongest first, the reproduction command with its copy button, what
was tried for an unknown one, an empty state), and the flaky-tests page's "Why flaky"
column, filtered by category with the count of each, in a bounded number of queries."""

from __future__ import annotations

import html as html_lib
import re

import pytest
from django.urls import reverse

from flakeboard import rules
from flakeboard.rules import CATEGORY_WORDS as WORDS
from runs.models import Measurement
from tests.helpers import node_page
from tests.test_node_diagnoses import (
    BOARDS,
    NODE,
    RESET,
    SEEDED,
    case,
    junit,
    measured,
)
from tests.world import people_world


@pytest.fixture
def viewer_client(client_for, viewer):
    return client_for(viewer)


def panel(client, suite, nodeid=NODE) -> str:
    """The node page's diagnosis section, unescaped."""
    page = client.get(node_page(suite.slug, nodeid)).content.decode()
    start = page.index('<section class="diagnosis"')
    return html_lib.unescape(page[start:page.index("</section>", start)])


def text(part: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", part)).strip()


# --- the node page ------------------------------------------------------------------------


def test_every_category_has_its_words():
    assert set(WORDS) == set(rules.Category)
    assert len({words.label for words in WORDS.values()}) == len(WORDS)
    assert WORDS[rules.Category.SEEDED].meaning.startswith(
        "It fails on its random input: replay the seed")


@pytest.mark.parametrize(("make", "category", "evidence", "command"), BOARDS,
                         ids=[board[1].value for board in BOARDS])
def test_the_panel_names_the_category_its_evidence_and_command(
        suite, viewer_client, make, category, evidence, command):
    make(suite)
    shown = panel(viewer_client, suite)
    words = WORDS[category]
    assert f'<span class="badge category c-{category.value}">{words.label}</span>' in shown
    assert words.meaning in shown
    if evidence:
        assert re.search(r'<ol class="evidence"><li>(.*?)</li>', shown)[1] == evidence
    else:
        assert '<ol class="evidence">' not in shown
    if command:
        assert f'<code id="diagnosis-command">{command}</code>' in shown
        assert 'data-copy="diagnosis-command"' in shown
        assert 'id="diagnosis-command-status"' in shown
    else:
        assert "data-copy" not in shown
    assert ("Tried:" in shown) is (category is rules.Category.UNKNOWN)


def test_the_evidence_is_listed_strongest_first(suite, viewer_client):
    # Seeded by its replay, and timing by its load block: seeded decides, both are listed.
    measured(suite, n=100, fails=2, classification="flaky", experiments={
        "seeded": SEEDED, "load": {"idle_n": 100, "idle_fails": 2, "load_n": 100,
                                   "load_fails": 31}})
    lines = re.findall(r"<li>(.*?)</li>", panel(viewer_client, suite))
    assert [line.split(" ")[1] for line in lines] == ["replays", "failed"]
    assert lines[1].startswith("2/100 failed idle, 31/100 under CPU load")


def test_an_unknown_one_says_what_was_tried(suite, viewer_client):
    measured(suite, n=20, fails=3, classification="flaky", experiments={"skipped": "budget"})
    junit(suite, case(NODE, "failed"), case(NODE, "passed"), commit="c1")
    assert "Tried: CI jobs; failure signatures; experiments cut short: --diagnose-budget " \
           "ran out." in text(panel(viewer_client, suite))


def test_an_unknown_one_with_nothing_tried_says_so(suite, viewer_client):
    measured(suite, n=20, fails=3)
    assert "Nothing to try yet" in text(panel(viewer_client, suite))


@pytest.mark.parametrize("row", [
    {"n": 200, "fails": 0, "classification": "stable"},  # measured, and not flaky
    {"n": 200, "fails": 0},
])
def test_a_node_neither_flaky_nor_suspect_has_no_diagnosis(suite, viewer_client, row):
    measured(suite, **row)
    shown = panel(viewer_client, suite)
    assert '<p class="empty">No diagnosis:' in shown
    assert "badge category" not in shown


def test_a_node_never_measured_nor_flaky_has_no_diagnosis(suite, viewer_client):
    junit(suite, case(NODE, "passed"), commit="c1")  # known, never flaky
    assert '<p class="empty">No diagnosis:' in panel(viewer_client, suite)


def test_a_node_flaky_in_junit_alone_is_diagnosed(suite, viewer_client):
    junit(suite, case(NODE, "failed"), case(NODE, "passed"), commit="c1")
    assert "c-unknown" in panel(viewer_client, suite)


def test_the_command_is_escaped(suite, viewer_client):
    command = "python3 flakeboard_ci.py replay 'tests/x.py::test_<b>' --seed 1"
    measured(suite, n=20, fails=3, classification="flaky",
             experiments={"seeded": {**SEEDED, "command": command}})
    page = viewer_client.get(node_page(suite.slug, NODE)).content.decode()
    assert "test_&lt;b&gt;" in page and "test_<b>" not in page


# --- the flaky-tests page -----------------------------------------------------------------

SEEDED_NODE, EXTERNAL_NODE, UNKNOWN_NODE = (
    "tests/test_a.py::test_seeded", "tests/test_a.py::test_external",
    "tests/test_a.py::test_unknown")


def build_world():
    """This module's shared world (tests/world.py): the suite and three tests flaky in JUnit,
    built once for a run of the tests that ask for it."""
    world = people_world()
    add_three(world.suite)
    return world


@pytest.fixture
def three(world):
    """Three tests flaky in JUnit: one seeded by its measurement, one failing on
    connection resets, one unexplained."""


def add_three(suite):
    for commit in ("c1", "c2"):
        junit(suite, case(SEEDED_NODE, "failed"), case(SEEDED_NODE, "passed"),
              case(EXTERNAL_NODE, "failed", RESET), case(EXTERNAL_NODE, "passed"),
              case(UNKNOWN_NODE, "failed"), case(UNKNOWN_NODE, "passed"), commit=commit)
    measured(suite, SEEDED_NODE, n=20, fails=3, classification="flaky",
             experiments={"seeded": SEEDED})


def flaky(client, suite, **query):
    return client.get(reverse("flaky", args=[suite.slug]), query)


def rows(response) -> dict[str, str]:
    return {row.node.nodeid: row.diagnosis.category for row in response.context["rows"]}


def test_each_row_shows_its_category(suite, viewer_client, three):
    response = flaky(viewer_client, suite)
    assert rows(response) == {SEEDED_NODE: "seeded", EXTERNAL_NODE: "external",
                              UNKNOWN_NODE: "unknown"}
    page = response.content.decode()
    for category in ("seeded", "external", "unknown"):
        label = WORDS[rules.Category(category)].label
        assert f'<span class="badge category c-{category}">{label}</span>' in page


def test_the_filter_counts_each_category_and_keeps_one(suite, viewer_client, three):
    response = flaky(viewer_client, suite, category="seeded")
    assert rows(response) == {SEEDED_NODE: "seeded"}
    assert response.context["page"].paginator.count == 1
    options = dict(re.findall(r'<option value="([a-z_]*)"(?: selected)?>([^<]+)</option>',
                              re.search(r'<select name="category".*?</select>',
                                        response.content.decode(), re.S)[0]))
    assert options == {"": "Any category (3)", **{
        category.value: f"{words.label} ({int(category in ('seeded', 'external', 'unknown'))})"
        for category, words in WORDS.items()}}
    assert '<option value="seeded" selected>' in response.content.decode()


def test_without_a_category_the_choices_are_not_counted(suite, viewer_client, three):
    # Counting diagnoses every listed test: only a category chosen asks for that.
    page = flaky(viewer_client, suite).content.decode()
    assert '<option value="" selected>Any category</option>' in page
    assert '<option value="seeded">Random input</option>' in page


def test_a_category_no_test_is_in_lists_none(suite, viewer_client, three):
    response = flaky(viewer_client, suite, category="timing")
    assert rows(response) == {}
    assert "No flaky test matches these filters." in response.content.decode()


def test_an_unknown_category_is_ignored(suite, viewer_client, three):
    assert len(rows(flaky(viewer_client, suite, category="cosmic_rays"))) == 3


def test_the_filter_keeps_the_other_filters(suite, viewer_client, three):
    response = flaky(viewer_client, suite, category="unknown", q="test_seeded")
    assert rows(response) == {}
    response = flaky(viewer_client, suite, category="external", q="test_e")
    assert rows(response) == {EXTERNAL_NODE: "external"}


def test_the_page_diagnoses_in_a_bounded_number_of_queries(
        suite, viewer_client, django_assert_max_num_queries):
    many = [f"tests/test_a.py::test_m{i}" for i in range(40)]
    for job in ("py3.12", "py3.13"):
        junit(suite, *[case(nodeid, outcome) for nodeid in many
                       for outcome in ("failed", "passed")], commit="c1", job=job)
    for nodeid in many[:10]:
        measured(suite, nodeid, n=20, fails=3, classification="flaky")
    Measurement.objects.update(experiments={"seeded": SEEDED})
    # The page's own five, and with a category, the six that diagnose every listed test.
    for query, most in (({}, 16), ({"category": "seeded"}, 22),
                        ({"category": "unknown", "page": "2"}, 22)):
        with django_assert_max_num_queries(most):
            response = flaky(viewer_client, suite, **query)
        assert response.status_code == 200
    assert len(rows(flaky(viewer_client, suite, category="seeded"))) == 10
    assert flaky(viewer_client, suite, category="unknown").context[
        "page"].paginator.count == 30


def test_the_measure_button_keeps_the_rows_category(suite, client_for, owner, three):
    client = client_for(owner)
    response = client.post(reverse("flaky_measure", args=[suite.slug]),
                           {"node": SEEDED_NODE, "marked": "1", "days": "30"},
                           headers={"HX-Request": "true"})
    assert 'class="badge category c-seeded"' in response.content.decode()
