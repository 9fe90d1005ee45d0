"""/metrics under gunicorn with several worker processes (flakeboard/gunicorn.py): the
counters add up every worker's, those that have exited included, whichever worker answers
the scrape. A real gunicorn on 127.0.0.1, its own SQLite file, stopped after."""

from __future__ import annotations

import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.throwaway import deployed_board

pytestmark = pytest.mark.slow

SECRET = "metrics-secret-1234"
UPLOADS = 40
MAX_REQUESTS = 10  # each worker exits after this many: the 40 uploads meet five or more


@pytest.fixture
def board(tmp_path):
    with deployed_board(tmp_path, options=("--max-requests", str(MAX_REQUESTS)),
                        METRICS_TOKEN=SECRET) as served:
        yield served


def test_one_scrape_counts_every_workers_uploads(board):
    for i in range(UPLOADS):
        body = json.dumps([{"nodeid": f"tests/test_a.py::test_{i}", "n": 200, "fails": 0}])
        status, text = board.call(f"/api/v1/suites/acme/reports?commit=c{i}", board.token,
                                  body=body.encode())
        assert status == 201, text
    status, text = board.call("/metrics", SECRET)
    assert status == 200, text
    counted = {tuple(sorted(sample.labels.items())): sample.value
               for family in text_string_to_metric_families(text)
               for sample in family.samples if sample.name == "flakeboard_uploads_total"}
    # Each worker served at most ten requests before it exited: only the sum is 40.
    assert counted[(("kind", "report"), ("outcome", "accepted"))] == UPLOADS
