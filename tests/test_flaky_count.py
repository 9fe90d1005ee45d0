"""One count of flaky tests over a window: a test flipped between gate attempts, flaky at
birth or flaky in JUnit files counts once, whatever else it showed. The overview's tile,
the flaky-tests page it links to, and ``board.flaky.flaky_count`` say the same number, and
the tile names its window and links to the page with it."""

from __future__ import annotations

import re
from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from board.flaky import FLAKY_TILE_DAYS, flaky_count
from junit.models import NodeDay
from junit.selectors import WINDOWS, Window
from junit.summary import rebuild_summary
from tests.test_flaky_at_birth import born
from tests.test_flaky_flips import FLIPPED, JUNIT, flip, junit_flake

OLD = "tests/test_a.py::test_old"  # flaky in a JUnit file, eight days ago
TILE = re.compile(
    r'<a class="tile[^"]*" href="([^"]+)"><span class="figure">(\d+)</span>'
    r" flaky tests? in the last (\d+) days"
)
HEADLINE = re.compile(r"(\d+) flaky tests? in the last (\d+) days")


def a_board_with_every_kind(suite):
    flip(suite)  # FLIPPED flipped between two attempts of the gate
    born(suite)  # BORN failed 6 of the guard's 30 runs
    junit_flake(suite, JUNIT)
    junit_flake(suite, FLIPPED, commit="j2")  # flaky in JUnit too: still one test
    junit_flake(suite, OLD, commit="j4")
    NodeDay.objects.filter(node__nodeid=OLD).update(
        day=NodeDay.objects.get(node__nodeid=OLD).day - timedelta(days=8)
    )
    rebuild_summary(suite, timezone.now().date())  # the rollups forged: summed again


def test_the_tile_the_page_and_the_count_say_one_number(suite, client_for, owner, today):
    a_board_with_every_kind(suite)
    client = client_for(owner)
    html = client.get(reverse("overview", args=[suite.slug])).content.decode()
    ((link, tile, days),) = TILE.findall(html)
    assert int(days) == FLAKY_TILE_DAYS and FLAKY_TILE_DAYS in WINDOWS
    assert link == f"{reverse('flaky', args=[suite.slug])}?days={FLAKY_TILE_DAYS}"
    page = client.get(link).content.decode()
    ((headline, page_days),) = set(HEADLINE.findall(page))
    assert int(tile) == int(headline) == flaky_count(suite, Window(today, FLAKY_TILE_DAYS))
    assert int(page_days) == FLAKY_TILE_DAYS
    assert int(tile) == 3  # FLIPPED, BORN and JUNIT; OLD is older than the window
    assert flaky_count(suite, Window(today, 30)) == 4


def test_each_kind_alone_is_counted(suite, today):
    week = Window(today, FLAKY_TILE_DAYS)
    assert flaky_count(suite, week) == 0
    flip(suite)
    assert flaky_count(suite, week) == 1
    born(suite)
    assert flaky_count(suite, week) == 2
    junit_flake(suite, JUNIT)
    assert flaky_count(suite, week) == 3
