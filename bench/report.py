"""The results: a table on the terminal, bench/results.json and docs/benchmarks.md."""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from .measure import ERROR, MET, MISSED, NOT_REPORTED, TIMES
from .server import load_tool, wrk_version

HEADERS = ("id", "db", "measure", "subject", "baseline", "ratio", "goal", "result")
LOAD_LIMIT = 1.0  # a 1-minute load average over this: the machine was doing other work
PROFILE_CUMULATIVE, PROFILE_OWN = 10, 8  # entries shown of each profile
SHOWN = {MET: "met", MISSED: "MISSED", ERROR: "ERROR", NOT_REPORTED: "NOT REPORTED"}
REPRODUCE = """\
```sh
make bench                        # every benchmark at scale 1 on SQLite (a scratch file)
DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres make bench
                                  # the same on SQLite, then on PostgreSQL: scratch databases
                                  # flakeboard_bench_* are created on that server and dropped
make bench BENCH_SCALE=0.01       # the smoke run that `make test` also makes
.venv/bin/python -m bench --only B1,B3 --scale 0.1 --out /tmp/bench
```"""


def _first_line(path: str) -> str:
    try:
        return Path(path).read_text().splitlines()[0]
    except (OSError, IndexError):
        return ""


def machine(db_versions: dict[str, str], load: dict, workers: dict[str, int]) -> dict:
    """The machine and the software the figures were measured with; ``workers``: the
    gunicorn workers of each benchmark that serves over HTTP."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor()
    memory = _first_line("/proc/meminfo").split(":", 1)[-1].split()
    if len(memory) == 2 and memory[0].isdigit():
        memory = f"{int(memory[0]) / 2**20:.1f} GiB"
    else:
        memory = " ".join(memory) or "?"

    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "?"

    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory": memory,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "django": version("django"),
        "gunicorn": version("gunicorn"),
        "gunicorn_workers": workers,
        "whitenoise": version("whitenoise"),
        "sqlite": sqlite3.sqlite_version,
        "databases": db_versions,
        "load_average": load,
        "load_generator": wrk_version() if load_tool() == "wrk" else "Python threads",
    }


# Pathspecs of what a run writes, left out of the dirty check.
OUTPUTS = (":(exclude)bench/results.json", ":(exclude)docs/benchmarks.md")


def git_state() -> dict:
    """The commit the tree is at, and whether it has uncommitted changes (None, None
    without git). A previous run's own output (results.json, benchmarks.md) is not one."""
    def git(*args) -> str:
        return subprocess.run(["git", *args], cwd=Path(__file__).resolve().parent.parent,
                              capture_output=True, text=True, check=True, timeout=60).stdout

    try:
        return {"commit": git("rev-parse", "HEAD").strip(),
                "dirty": bool(git("status", "--porcelain", "--", ".", *OUTPUTS).strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def _over(value) -> bool:
    return value is not None and value > LOAD_LIMIT


def load_check(load: dict, rows: list[dict]) -> dict:
    """Whether the 1-minute load average was over LOAD_LIMIT at the run's start or end
    (``over``), and the benchmarks that began or ended with it over (``benchmarks``)."""
    busy = {}
    for row in rows:
        seen = row.get("figures", {}).get("load_average") or {}
        if _over(seen.get("before")) or _over(seen.get("after")):
            busy[f"{row['id']} on {row['backend']}"] = seen
    return {"limit": LOAD_LIMIT, "over": _over(load.get("start")) or _over(load.get("end")),
            "benchmarks": {name: [seen.get("before"), seen.get("after")]
                           for name, seen in busy.items()}}


def load_warning(payload: dict) -> str:
    """A sentence or two on a busy machine; empty when it was not."""
    check = payload.get("load_warning") or {}
    said = []
    if check.get("over"):
        said.append(f"the 1-minute load average was {load_text(payload['machine']['load_average'])}"
                    f", over {check['limit']:.1f}")
    if check.get("benchmarks"):
        said.append("these benchmarks began or ended with it over "
                    f"{check['limit']:.1f}: " + ", ".join(
                        f"{name} ({_load(before)} → {_load(after)})"
                        for name, (before, after) in check["benchmarks"].items()))
    if not said:
        return ""
    return ("The machine was busy: " + "; ".join(said) + ". Wall-clock figures measured "
            "then are slower than on an idle machine. The benchmarks' own work (the ingest, "
            "gunicorn and the load generator) counts in the load average too.")


def _load(value) -> str:
    return "?" if value is None else f"{value:.2f}"


def ratio_text(row: dict) -> str:
    if row.get("ratio") is None:
        return "—"
    return f"{row['ratio']:.2f}{TIMES}"


def cells(row: dict) -> list[str]:
    status = row["status"]
    return [row["id"], row["backend"], row["what"], row["subject"] or "—",
            row["baseline"] or "—", ratio_text(row), row["goal"] or "—",
            SHOWN.get(status, status)]


def text_table(rows: list[dict]) -> str:
    lines = [list(HEADERS), *[cells(row) for row in rows]]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADERS))]
    rendered = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
                for line in lines]
    rendered.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(rendered)


def table_lines(headers, lines) -> str:
    def line(values):
        return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |"

    return "\n".join([line(headers), line(["---"] * len(headers)), *map(line, lines)])


def markdown_table(rows: list[dict]) -> str:
    return table_lines(HEADERS, [cells(row) for row in rows])


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    partial.replace(path)


def commit_text(payload: dict) -> str:
    if not payload.get("commit"):
        return ""
    dirty = " with uncommitted changes" if payload.get("dirty") else ""
    return f", at commit `{payload['commit'][:12]}`{dirty}"


def workers_text(workers: dict[str, int]) -> str:
    """``sync workers: 2 (B2, B5), 4 (B8)``: the worker counts the HTTP benchmarks used."""
    by_count: dict[int, list[str]] = {}
    for bench_id, count in workers.items():
        by_count.setdefault(count, []).append(bench_id)
    parts = [f"{count} ({', '.join(ids)})" for count, ids in sorted(by_count.items())]
    return f"sync workers: {', '.join(parts)}" if parts else "not used in this run"


def profile_table(entries: list[dict], shown: int) -> str:
    return table_lines(("function", "calls", "own s", "cumulative s"), [
        [f"`{e['function']}`", f"{e['ncalls']:,}", f"{e['tottime_s']:.3f}",
         f"{e['cumtime_s']:.3f}"] for e in entries[:shown]
    ])


def profile_intro(profile: dict) -> str:
    runs = profile["runs"]
    if runs == 1:
        return f"One run under cProfile: {profile['total_s']:.2f} s profiled."
    return (f"{runs:,} calls under cProfile: {profile['total_s']:.2f} s profiled, "
            f"{profile['total_s'] / runs * 1e6:,.0f} µs a call.")


def where_the_time_goes(rows: list[dict], gaps: dict[str, str]) -> list[str]:
    """Each profiled row's top entries, by benchmark (in each, the rows in run order:
    SQLite first), then what still separates the benchmark from its goal."""
    profiled: dict[str, list[dict]] = {}
    for row in rows:
        if row.get("figures", {}).get("profile"):
            profiled.setdefault(row["id"], []).append(row)
    if not profiled:
        return []
    out = [
        "## Where the time goes",
        "",
        "After its timed runs, each of these benchmarks runs its subject once more (B2: "
        "many calls) under cProfile, in the benchmark's own process: B2 and B5 call the "
        "WSGI application directly, so HTTP and gunicorn are not in their profiles. The "
        "profiler slows Python code more than the database's or the C library's, so read "
        "the shares, not the seconds. *own s* is time in the function itself, "
        "*cumulative s* includes what it calls. By cumulative time, the entries that span "
        "the whole run and those that only hand the work on to one callee (a middleware "
        "passing the request along) are left out.",
        "",
    ]
    for bench_id, bench_rows in profiled.items():
        out += [f"### {bench_id}", ""]
        for row in bench_rows:
            profile = row["figures"]["profile"]
            out += [
                f"**{row['what']}** ({row['backend']}). {profile_intro(profile)}",
                "",
                f"By cumulative time (top {PROFILE_CUMULATIVE}):",
                "",
                profile_table(profile["by_cumulative"], PROFILE_CUMULATIVE),
                "",
                f"By own time (top {PROFILE_OWN}):",
                "",
                profile_table(profile["by_own"], PROFILE_OWN),
                "",
            ]
        if gaps.get(bench_id):
            out += [f"**What separates it from its goal.** {' '.join(gaps[bench_id].split())}",
                    ""]
    return out


def markdown(payload: dict, about: dict[str, str], gaps: dict[str, str] | None = None) -> str:
    m = payload["machine"]
    rows = payload["rows"]
    dbs = ", ".join(f"{name} {v}" for name, v in m["databases"].items())
    warning = load_warning(payload)
    out = [
        "# Benchmarks",
        "",
        f"Generated by `{payload['command']}` on {payload['generated'][:16].replace('T', ' ')}"
        f" UTC{commit_text(payload)}, at scale {payload['scale']:g}, in "
        f"{payload['duration_s'] / 60:.1f} minutes. "
        "This file is written by the run: to change it, run the benchmarks again.",
        "",
        "Each benchmark makes its own data (bulk inserts, a fixed seed) in a scratch "
        "database, times its subject and its baseline in the same run, interleaved, and "
        "reports medians. *ratio* is subject ÷ baseline; where there is no baseline it is "
        "the figure ÷ its limit.",
        "",
        "## Results",
        "",
        markdown_table(rows),
        "",
    ]
    if warning:
        out += [f"**Warning:** {warning}", ""]
    notes = [r for r in rows if r["status"] in (MISSED, ERROR, NOT_REPORTED) or r["detail"]]
    if notes:
        out += ["Notes:", ""]
        out += [f"- **{r['id']} {r['what']}** ({r['backend']}, {SHOWN.get(r['status'],
                r['status'])}): {r['detail'] or '—'}" for r in notes]
        out.append("")
    out += where_the_time_goes(rows, gaps or {})
    out += [
        "## Machine",
        "",
        "| | |",
        "|---|---|",
        f"| CPUs | {m['cpus']}, {m['cpu'] or '?'} |",
        f"| memory | {m['memory']} |",
        f"| system | {m['platform']} |",
        f"| Python | {m['python']} |",
        f"| Django | {m['django']} |",
        f"| databases | {dbs} |",
        f"| gunicorn | {m['gunicorn']}, {workers_text(m.get('gunicorn_workers') or {})}; "
        f"WhiteNoise {m['whitenoise']} |",
        f"| load generator | {m['load_generator']} |",
        f"| load average (1 min) | {load_text(m['load_average'])} |",
        "",
        "Wall-clock figures include any other work the machine was doing; the load average "
        "says how busy it was. Ratios are less affected, since subject and baseline "
        "alternate; the rows' details also give this process's CPU time where it is the "
        "server's.",
        "",
        "## What each benchmark measures",
        "",
    ]
    for bench_id, text in about.items():
        out += [f"### {bench_id}", "", text.strip(), ""]
    out += ["## How to reproduce", "", REPRODUCE, ""]
    return "\n".join(out)


def load_text(load: dict) -> str:
    if not load or load.get("start") is None:
        return "?"
    return f"{_load(load['start'])} at the start, {_load(load.get('end'))} at the end"


def write_markdown(path: Path, payload: dict, about: dict[str, str],
                   gaps: dict[str, str] | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown(payload, about, gaps))


def stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
