"""The live server the browser tests and the CI client call: on the in-memory SQLite
database its requests share one connection, so it must answer each whole when they come at
once, as a page and the panels it fetches on load do."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.slow  # a real server, answering 96 requests sent at once


def test_requests_at_once_are_each_answered_whole(live_board, suite, token):
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda _: live_board.ledger(suite.slug, token).status, range(96)))
    assert answers == [200] * 96
