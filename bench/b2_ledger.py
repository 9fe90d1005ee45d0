"""B2: ``GET /api/v1/suites/{suite}/ledger`` with 2,000 open entries, served by gunicorn
(2 sync workers) to 16 concurrent clients, against the same bytes served as a static file
by WhiteNoise in the same gunicorn.

The 304 path sends the ledger's ``ETag`` back in ``If-None-Match`` and is measured against
WhiteNoise's own 304 for the same file (issue 15); its ratio to the static file's full
answers is shown too. Each figure has a floor (the row's limit) and a goal beside it.
The suite also holds 1,000 cleared entries (history the served ledger leaves out).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import connections
from django.test import Client
from django.utils import timezone

from ledger.tokens import token_create

from . import data
from .measure import ERROR, TIMES, Row, median, progress, repeats, routable, scaled, unavailable
from .server import WORKERS, Gunicorn, drive, fetch

ID = "B2"
ENTRIES = 2_000
FULL_LIMIT, FULL_GOAL = 0.5, 0.7  # of the static file's full answers
NOT_MODIFIED_LIMIT, NOT_MODIFIED_GOAL = 0.6, 0.9  # of WhiteNoise's own 304
SECONDS = 3.0


def _world(scale: float):
    today = timezone.now().date()
    suite = data.make_suite("b2")
    count = scaled(scale, ENTRIES, 20)
    nodes = data.make_nodes(suite, data.nodeids(count * 3 // 2 + 10), today)
    data.make_entries(suite, nodes[:count], today, seed=2)
    data.make_entries(suite, nodes[count : count + count // 2], today, seed=3, cleared=True)
    _, raw = token_create(suite=suite, scope="read", actor="bench", name="bench")
    return suite, count, raw


def settle(server) -> None:
    """Wait out the requests a load run left queued, so the next run starts idle."""
    for _ in range(WORKERS):
        fetch(server.url("/healthz"))


def run(scale: float, backend: str, workdir: Path) -> list[Row]:
    what_full = "GET /ledger, 16 clients"
    what_304 = "GET /ledger → 304, 16 clients"
    path = "/api/v1/suites/b2/ledger"
    if not routable(path):
        return [unavailable(f"{ID}", backend, what_full, "GET /api/v1/suites/{suite}/ledger"),
                unavailable(f"{ID}", backend, what_304, "GET /api/v1/suites/{suite}/ledger")]
    _, count, raw = _world(scale)
    auth = {"Authorization": f"Bearer {raw}"}
    answer = Client().get(path, headers=auth)
    if answer.status_code != 200:
        raise RuntimeError(f"{path} answered {answer.status_code}: {answer.content[:300]!r}")
    static = Path(settings.STATIC_ROOT) / "bench" / f"ledger-{backend}.json"
    static.parent.mkdir(parents=True, exist_ok=True)
    static.write_bytes(answer.content)
    static_path = f"/{settings.STATIC_URL.strip('/')}/bench/{static.name}"
    connections.close_all()

    rounds = repeats(scale, 3, least=1)
    seconds = SECONDS if scale >= 1 else 1.0
    with Gunicorn(workdir / f"gunicorn-{ID}.log") as server:
        status, headers, body = fetch(server.url(path), auth)
        _, static_headers, static_body = fetch(server.url(static_path))
        if status != 200 or body != static_body:
            raise RuntimeError(f"the API answered {status} with {len(body)} bytes; "
                               f"the static copy has {len(static_body)}")
        etag = {k.lower(): v for k, v in headers.items()}.get("etag")
        static_etag = {k.lower(): v for k, v in static_headers.items()}.get("etag")
        if not etag or fetch(server.url(path), {**auth, "If-None-Match": etag})[0] != 304:
            raise RuntimeError("the ledger did not answer 304 to its own ETag")
        paths = {
            "api": (server.url(path), auth),
            "static": (server.url(static_path), {}),
            "api_304": (server.url(path), {**auth, "If-None-Match": etag}),
            "static_304": (server.url(static_path), {"If-None-Match": static_etag}),
        }
        progress(f"{ID}: {rounds} rounds of {seconds:g} s per path, interleaved")
        loads: dict[str, list] = {name: [] for name in paths}
        for rnd in range(rounds):
            names = list(paths)
            names = names[rnd % 4 :] + names[: rnd % 4]
            for name in names:
                url, sent = paths[name]
                loads[name].append(drive(url, sent, seconds))
                settle(server)
    rps = {name: median([load.rps for load in runs]) for name, runs in loads.items()}
    bad = {name: sum(load.bad for load in runs) for name, runs in loads.items()}
    figures = {"entries": count, "bytes": len(body), "tool": loads["api"][0].tool,
               "seconds_per_run": seconds, "rounds": rounds,
               "rps": {name: [round(load.rps, 1) for load in runs]
                       for name, runs in loads.items()}, "bad_answers": bad}
    rows = [
        Row(ID, backend, what_full,
            subject=f"{rps['api']:,.0f} req/s", baseline=f"{rps['static']:,.0f} req/s",
            goal=f"≥ {FULL_LIMIT:g}{TIMES} baseline (goal {FULL_GOAL:g}{TIMES})",
            ratio=rps["api"] / rps["static"], limit=FULL_LIMIT, at_most=False,
            detail=f"{count:,} entries, {len(body):,} bytes; baseline WhiteNoise static file",
            figures=figures).judge(),
        Row(ID, backend, what_304,
            subject=f"{rps['api_304']:,.0f} req/s", baseline=f"{rps['static_304']:,.0f} req/s",
            goal=f"≥ {NOT_MODIFIED_LIMIT:g}{TIMES} baseline (goal {NOT_MODIFIED_GOAL:g}{TIMES})",
            ratio=rps["api_304"] / rps["static_304"], limit=NOT_MODIFIED_LIMIT, at_most=False,
            detail=f"baseline WhiteNoise's own 304; against the static file's full answers "
                   f"({rps['static']:,.0f} req/s) {rps['api_304'] / rps['static']:.2f}{TIMES}",
            figures=figures).judge(),
    ]
    if any(bad.values()):
        for row in rows:
            row.status, row.detail = ERROR, f"bad answers under load: {bad}"
    return rows
