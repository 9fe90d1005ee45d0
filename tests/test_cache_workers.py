"""Workers that share one Redis cache (CACHE_URL=redis://) never serve a stale ledger: two
gunicorn workers answer the ledger, cache it between them, and after a change made from
outside them (another host's manage.py) every answer is the new ledger, and a token revoked
there is refused by both. A real gunicorn and a real redis-server on 127.0.0.1, each
stopped after, on the database DATABASE_URL selects (on PostgreSQL, the workers learn of
the changes by notification: ledger/changes.py)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.throwaway import configured_backend, deployed_board

pytestmark = pytest.mark.slow

FLAKY = "tests/test_ingest.py::test_stream_backpressure"
READS = 20  # on a connection each: both workers answer some


def ledgers(board) -> set[str]:
    """The distinct bodies of READS ledger answers, each a 200."""
    bodies = set()
    for _ in range(READS):
        status, text = board.call("/api/v1/suites/acme/ledger", board.token)
        assert status == 200, text
        bodies.add(text)
    return bodies


def test_workers_sharing_a_redis_cache_never_serve_a_stale_ledger(tmp_path, redis_url):
    with deployed_board(tmp_path, backend=configured_backend(), CACHE_URL=redis_url) as board:
        # Room for the one entry whatever the test set: the cap is not under test here.
        board.manage("shell", "-c", "from ledger.models import Suite; "
                     "Suite.objects.filter(slug='acme').update(max_quarantined_share=1.0)")
        assert ledgers(board) == {"{}"}
        expires = (timezone.now().date() + timedelta(days=5)).isoformat()
        ledger = tmp_path / "flake_ledger.json"
        ledger.write_text(json.dumps({FLAKY: {
            "class": "flake", "seed_base": 9137, "n": 200, "fails": 5, "owner": "@finley",
            "expires": expires, "evidence": "ci/run-1"}}))
        board.manage("import_ledger", "acme", str(ledger))
        served = ledgers(board)
        assert len(served) == 1 and FLAKY in json.loads(served.pop())
        # A tier rule drops it from the served ledger (it becomes a tier violation).
        board.manage("add_tier_rule", "acme", "tests/test_ingest.py::*", "0")
        assert ledgers(board) == {"{}"}
        # Revoked from outside: each worker had the token, and neither serves it again.
        board.manage("shell", "-c", "from ledger.models import ApiToken; "
                     "from ledger.tokens import token_revoke; "
                     f"token_revoke(token=ApiToken.objects.get(prefix='{board.token[:12]}'), "
                     "actor='ops')")
        refused = {board.call("/api/v1/suites/acme/ledger", board.token)[0]
                   for _ in range(READS)}
        assert refused == {401}
