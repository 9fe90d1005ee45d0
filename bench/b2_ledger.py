"""B2: ``GET /api/v1/suites/{suite}/ledger`` with 2,000 open entries, served by gunicorn
(2 sync workers) to 16 concurrent clients, against the same bytes served as a static file
by WhiteNoise in the same gunicorn.

The 304 path sends the ledger's ``ETag`` back in ``If-None-Match`` and is measured against
WhiteNoise's own 304 for the same file (issue 15); its ratio to the static file's full
answers is shown too. Each figure has a floor (the row's limit) and a goal beside it.
The suite also holds 1,000 cleared entries (history the served ledger leaves out).

After the load runs, both answers of each path are also timed in this process, straight
through the WSGI application (no HTTP, no gunicorn), and the API's are profiled there.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.db import connections
from django.test import Client
from django.utils import timezone

from ledger.tokens import token_create

from . import data
from .measure import ERROR, TIMES, Row, median, progress, repeats, routable, scaled, unavailable
from .profiling import per_call_us, profile, wsgi_call
from .server import WORKERS, Gunicorn, drive, fetch, refused_without_wrk

ID = "B2"
ENTRIES = 2_000
FULL_LIMIT, FULL_GOAL = 0.5, 0.7  # of the static file's full answers
NOT_MODIFIED_LIMIT, NOT_MODIFIED_GOAL = 0.6, 0.9  # of WhiteNoise's own 304
SECONDS = 3.0
CALLS = 2_000  # in-process calls of each answer, at most (and within a load run's seconds)
# What still separates the figures from their goals, as the profiles show them.
GAP = """
Both answers pay Django's own per-request work: building the request, the request_started
and request_finished signals (each checks the database connection) and the response's
headers. WhiteNoise answers second in the middleware chain, after SecurityMiddleware
alone; the ledger's fast path answers after common, clickjacking and CSP, so it also pays
their work and the headers they set, which keeps both of the ledger's paths answering
alike. Its own part is small: the token and its suite as this process last read them
(read again only after a token or a suite changed: ledger/changes.py, SQLite's data
version or PostgreSQL's notifications, so a revoked token or a new revision is not
missed), the ETag from a memo, and the 304 itself. Under gunicorn each of these costs
several times its in-process figure (cold caches between requests), so the last
microseconds count for more than the in-process profile suggests. The goal (0.9) would
take answering before Django's handler, outside the middlewares whose headers the answer
must carry; the full answer also unpickles the cached bytes from Django's cache on every
call, where WhiteNoise sends a file it holds open.
"""


def _world(scale: float):
    today = timezone.now().date()
    suite = data.make_suite("b2")
    count = scaled(scale, ENTRIES, 20)
    nodes = data.make_nodes(suite, data.nodeids(count * 3 // 2 + 10), today)
    data.make_entries(suite, nodes[:count], today, seed=2)
    data.make_entries(suite, nodes[count : count + count // 2], today, seed=3, cleared=True)
    _, raw = token_create(suite=suite, scope="read", actor="bench", name="bench")
    return suite, count, raw


def etag_of(headers: dict) -> str | None:
    return {k.lower(): v for k, v in headers.items()}.get("etag")


def in_process(path: str, static_path: str, auth: dict, seconds: float) -> tuple[dict, dict]:
    """Microseconds per call of each answer, the API's and WhiteNoise's, called straight
    through the WSGI application in this process; and the API's two answers' profiles."""
    app = get_wsgi_application()
    etags = {target: etag_of(wsgi_call(app, "GET", target, sent)[1])
             for target, sent in ((path, auth), (static_path, {}))}
    answers = {
        "api_200": (path, auth, 200),
        "static_200": (static_path, {}, 200),
        "api_304": (path, {**auth, "If-None-Match": etags[path]}, 304),
        "static_304": (static_path, {"If-None-Match": etags[static_path]}, 304),
    }
    calls = {}
    for name, (target, sent, status) in answers.items():
        calls[name] = lambda target=target, sent=sent: wsgi_call(app, "GET", target, sent)
        if (got := calls[name]()[0]) != status:
            raise RuntimeError(f"in process, {target} answered {got}, not {status}")
    timed = per_call_us(calls, most=CALLS, seconds=seconds)
    progress(f"{ID}: the API's answers in process, under cProfile")
    profiles = {name: profile(calls[name], runs=timed[name][1])
                for name in ("api_200", "api_304")}
    return {name: round(us, 1) for name, (us, _) in timed.items()}, profiles


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
    if refused := refused_without_wrk(ID, backend, (what_full, what_304), scale):
        return refused
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
        etag, static_etag = etag_of(headers), etag_of(static_headers)
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
    us, profiles = in_process(path, static_path, auth, seconds)
    rps = {name: median([load.rps for load in runs]) for name, runs in loads.items()}
    bad = {name: sum(load.bad for load in runs) for name, runs in loads.items()}
    figures = {"entries": count, "bytes": len(body), "tool": loads["api"][0].tool,
               "seconds_per_run": seconds, "rounds": rounds,
               "rps": {name: [round(load.rps, 1) for load in runs]
                       for name, runs in loads.items()}, "bad_answers": bad,
               "in_process_us": us}

    def in_process_text(answer: str) -> str:
        return (f"; in process (no HTTP) {us[f'api_{answer}']:,.0f} µs a call against "
                f"WhiteNoise's {us[f'static_{answer}']:,.0f} µs")
    rows = [
        Row(ID, backend, what_full,
            subject=f"{rps['api']:,.0f} req/s", baseline=f"{rps['static']:,.0f} req/s",
            goal=f"≥ {FULL_LIMIT:g}{TIMES} baseline (goal {FULL_GOAL:g}{TIMES})",
            ratio=rps["api"] / rps["static"], limit=FULL_LIMIT, at_most=False,
            detail=f"{count:,} entries, {len(body):,} bytes; baseline WhiteNoise static file"
                   f"{in_process_text('200')}",
            figures={**figures, "profile": profiles["api_200"]}).judge(),
        Row(ID, backend, what_304,
            subject=f"{rps['api_304']:,.0f} req/s", baseline=f"{rps['static_304']:,.0f} req/s",
            goal=f"≥ {NOT_MODIFIED_LIMIT:g}{TIMES} baseline (goal {NOT_MODIFIED_GOAL:g}{TIMES})",
            ratio=rps["api_304"] / rps["static_304"], limit=NOT_MODIFIED_LIMIT, at_most=False,
            detail=f"baseline WhiteNoise's own 304; against the static file's full answers "
                   f"({rps['static']:,.0f} req/s) {rps['api_304'] / rps['static']:.2f}{TIMES}"
                   f"{in_process_text('304')}",
            figures={**figures, "profile": profiles["api_304"]}).judge(),
    ]
    if any(bad.values()):
        for row in rows:
            row.status, row.detail = ERROR, f"bad answers under load: {bad}"
    return rows
