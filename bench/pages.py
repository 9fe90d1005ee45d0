"""Pages timed in process through Django's test client, signed in as a staff user: the
server's own time (middleware, view, queries, template), without a network.

The pages alternate; each gets one untimed request first, and its queries are counted on
a further untimed request.
"""

from __future__ import annotations

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from . import data
from .measure import ERROR, Row, fmt_seconds, interleaved, progress, repeats, routable, unavailable

MS_LIMIT, QUERY_LIMIT = 150, 12


def page_rows(bench_id: str, backend: str, pages: dict[str, str], *, scale: float,
              figures: dict) -> list[Row]:
    """One row per page ({name: path}), in the given order: the median time over
    interleaved rounds and the query count, judged against MS_LIMIT and QUERY_LIMIT;
    ``figures`` (what the data holds) go into every row's figures."""
    rows, live = [], {}
    client = Client()
    client.force_login(data.staff_user())
    for name, path in pages.items():
        if not routable(path.partition("?")[0]):
            rows.append(unavailable(bench_id, backend, name, f"the page {path}"))
            continue
        answer = client.get(path)
        if answer.status_code != 200:
            rows.append(Row(bench_id, backend, name, status=ERROR,
                            detail=f"{path} answered {answer.status_code}"))
            continue
        with CaptureQueriesContext(connection) as queries:
            client.get(path)
        live[name] = (path, len(queries), len(answer.content))

    def fetch(path):
        def one(_):
            assert client.get(path).status_code == 200
        return one

    rounds = repeats(scale, 11, least=3)
    progress(f"{bench_id}: {rounds} rounds of {len(live)} pages, interleaved")
    times = interleaved({name: fetch(path) for name, (path, _, _) in live.items()}, rounds)
    for name, (path, count, size) in live.items():
        seconds = times.median(name)
        row = Row(
            bench_id, backend, name, subject=f"{fmt_seconds(seconds)}, {count} queries",
            goal=f"≤ {MS_LIMIT} ms, ≤ {QUERY_LIMIT} queries",
            ratio=seconds * 1000 / MS_LIMIT, limit=1.0,
            detail=f"{path}: {size:,} bytes; query ratio {count / QUERY_LIMIT:.2f}; CPU "
                   f"of this process {fmt_seconds(times.cpu_median(name))}",
            figures={"seconds": times.wall[name], "cpu_seconds": times.cpu[name],
                     "queries": count, "bytes": size, **figures},
        )
        rows.append(row.judge(count <= QUERY_LIMIT))
    order = list(pages)
    return sorted(rows, key=lambda row: order.index(row.what))
