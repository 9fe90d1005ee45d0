"""Where a benchmark's time goes: a callable under cProfile, its top entries as plain dicts,
and a bare WSGI call (no HTTP, no test client) for profiling a request in process.

Nothing here imports Django: the WSGI helpers take the application as an argument.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import re
import statistics
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP = 12
WHOLE = 0.98  # entries with this share of the total or more span the whole run: left out
PASSING = 0.97  # an entry that spends this share of its time in one callee only passes it on
_PREFIXES = sorted(
    {(path.rstrip("/") + "/") for path in
     (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
      sysconfig.get_paths()["stdlib"], str(ROOT)) if path},
    key=len, reverse=True,
)


def where(func: tuple[str, int, str]) -> str:
    """``file:line(name)`` with the file relative to site-packages, the standard library
    or the project; a built-in's name alone."""
    filename, line, name = func
    if filename == "~" or (filename.startswith("<") and not line):
        return re.sub(r" at 0x[0-9a-f]+>$", ">", name)
    for prefix in _PREFIXES:
        if filename.startswith(prefix):
            filename = filename[len(prefix):]
            break
    return f"{filename}:{line}({name})"


def _entry(func, stat) -> dict:
    _, ncalls, tottime, cumtime, _ = stat
    return {"function": where(func), "ncalls": ncalls, "tottime_s": round(tottime, 6),
            "cumtime_s": round(cumtime, 6)}


def profile(fn: Callable[[], object], *, runs: int = 1, top: int = TOP) -> dict:
    """Run ``fn`` ``runs`` times under cProfile; the total profiled seconds and the ``top``
    entries by cumulative and by own time (the profiler's overhead is in every figure).

    By cumulative time, the entries that span the whole run (``fn`` itself, the function it
    wraps) and those that spend nearly all their time in one callee (a middleware handing
    the request on) are left out: they say nothing of where the time goes."""
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    try:
        for _ in range(runs):
            fn()
    finally:
        profiler.disable()
    wall = time.perf_counter() - started
    stats = pstats.Stats(profiler, stream=io.StringIO()).stats
    code = getattr(fn, "__code__", None)
    own = (code.co_filename, code.co_firstlineno, code.co_name) if code else None
    entries = [(func, stat) for func, stat in stats.items()
               if func != own and "_lsprof.Profiler" not in func[2]]
    total = sum(stat[2] for _, stat in entries)
    passed_on: dict = {}  # caller: the most time it spent in any one callee
    for func, (*_, callers) in stats.items():
        for caller, edge in callers.items():
            if caller != func:
                passed_on[caller] = max(passed_on.get(caller, 0.0), edge[3])
    partial = [(func, stat) for func, stat in entries if stat[3] < WHOLE * total
               and passed_on.get(func, 0.0) < PASSING * stat[3]]

    def ranked(chosen, index):
        return [_entry(func, stat) for func, stat in
                sorted(chosen, key=lambda item: item[1][index], reverse=True)[:top]]

    return {"runs": runs, "total_s": round(total, 6), "wall_s": round(wall, 6),
            "by_cumulative": ranked(partial, 3), "by_own": ranked(entries, 2)}


def wsgi_environ(method: str, path: str, headers: dict | None = None, body: bytes = b"",
                 query: str = "") -> dict:
    """A WSGI environ as gunicorn would hand it over, for a request to 127.0.0.1."""
    environ = {
        "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": "127.0.0.1",
        "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
        "wsgi.errors": io.StringIO(), "wsgi.multithread": False, "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if body:
        environ["CONTENT_LENGTH"] = str(len(body))
    for name, value in (headers or {}).items():
        key = name.upper().replace("-", "_")
        if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            environ[key] = value
        else:
            environ[f"HTTP_{key}"] = value
    return environ


def wsgi_call(app, method: str, path: str, headers: dict | None = None,
              body: bytes = b"") -> tuple[int, dict, bytes]:
    """One request straight to the WSGI application: its status, headers and body (the
    answer's iterable consumed and closed, as a server would)."""
    answer: dict = {}

    def start_response(status, response_headers, exc_info=None):
        answer["status"], answer["headers"] = int(status.split()[0]), dict(response_headers)

    chunks = app(wsgi_environ(method, path, headers, body), start_response)
    try:
        content = b"".join(chunks)
    finally:
        if hasattr(chunks, "close"):
            chunks.close()
    return answer["status"], answer["headers"], content


def per_call_us(calls: dict[str, Callable[[], object]], *, most: int, seconds: float,
                rounds: int = 5) -> dict[str, tuple[float, int]]:
    """Microseconds per call of each callable, the median over ``rounds`` batches taken in
    turn (so that a busy moment weighs on all of them), each batch ``most / rounds`` calls
    or ``seconds / rounds``, whichever ends first; with the number of calls timed. Each is
    called once to warm up first."""
    for fn in calls.values():
        fn()
    found: dict[str, list[float]] = {name: [] for name in calls}
    counts = dict.fromkeys(calls, 0)
    names = list(calls)
    for rnd in range(rounds):
        for name in names[rnd % len(names):] + names[:rnd % len(names)]:
            done, started = 0, time.perf_counter()
            deadline = started + seconds / rounds
            while done < max(1, most // rounds) and (done == 0 or time.perf_counter() < deadline):
                calls[name]()
                done += 1
            found[name].append((time.perf_counter() - started) / done * 1e6)
            counts[name] += done
    return {name: (statistics.median(found[name]), counts[name]) for name in calls}
