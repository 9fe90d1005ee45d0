"""Run the benchmarks: ``python -m bench [--scale 1] [--only B1,B3] [--out DIR]``.

Each benchmark runs in a process of its own on fresh scratch databases: SQLite always,
PostgreSQL too when DATABASE_URL names a PostgreSQL server. The table is printed, and
written with the machine's description to results.json and benchmarks.md (by default
bench/results.json and docs/benchmarks.md; with --out, both in DIR).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

from . import report
from .measure import ERROR, MISSED, Row, load_average
from .scratch import ROOT, PostgresScratch, SqliteScratch, is_postgres, redact
from .server import WORKERS as SERVER_WORKERS
from .worker import MODULES

SECOND_DATABASE = {"B3"}  # benchmarks that compare two scratch databases
NO_DATABASE = {"B6", "B6b", "B6e", "B11"}  # benchmarks that use none: run once, in the SQLite pass
WORKER_TIMEOUT_S = 900


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=float(os.environ.get("BENCH_SCALE", 1)),
                        help="data sizes relative to the goals' (default 1; 0.01 is a smoke run)")
    parser.add_argument("--only", default="", help="comma-separated ids, e.g. B1,B3")
    parser.add_argument("--out", type=Path, help="write results.json and benchmarks.md here")
    args = parser.parse_args(argv)
    if args.scale <= 0:
        parser.error("--scale must be positive")
    known = {bench_id.upper(): bench_id for bench_id in MODULES}  # B6b is b6b or B6B
    asked = [b.strip() for b in args.only.split(",") if b.strip()]
    wanted = [known.get(b.upper(), b) for b in asked]
    unknown = sorted(set(wanted) - set(MODULES))
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(MODULES)}")
    args.selected = [b for b in MODULES if not wanted or b in wanted]
    return args


def bench_env(workdir: Path) -> dict:
    """Production settings, on plain local HTTP, with a scratch static root."""
    static = workdir / "static"
    static.mkdir(exist_ok=True)
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "bench.settings",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "PYTHONUNBUFFERED": "1",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
        "SECURE_SSL_REDIRECT": "false",
        "SECURE_COOKIES": "false",
        "SECURE_HSTS_SECONDS": "0",
        "STATICFILES_BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage",
        "BENCH_STATIC_ROOT": str(static),
        "LOG_LEVEL": "ERROR",
    }


def run_worker(bench_id: str, scratch, scale: float, workdir: Path, env: dict) -> list[dict]:
    labels = [bench_id] + ([f"{bench_id}_second"] if bench_id in SECOND_DATABASE else [])
    urls = [scratch.create(label) for label in labels]
    result = workdir / f"{bench_id}-{scratch.name}.json"
    worker_env = {**env, "DATABASE_URL": urls[0]}
    if len(urls) > 1:
        worker_env["BENCH_SECOND_DATABASE_URL"] = urls[1]
    tail: deque[str] = deque(maxlen=30)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.worker", bench_id, "--scale", repr(scale),
             "--backend", scratch.name, "--workdir", str(workdir), "--result", str(result)],
            cwd=ROOT, env=worker_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )
        watchdog = threading.Timer(WORKER_TIMEOUT_S, proc.kill)
        watchdog.start()
        try:
            for line in proc.stdout:
                sys.stderr.write(line)
                tail.append(line.rstrip())
            code = proc.wait()
        finally:
            watchdog.cancel()
    finally:
        for url in urls:
            scratch.drop(url)
    if code == 0 and result.exists():
        return json.loads(result.read_text())
    last = next((line for line in reversed(tail) if line.strip()), f"exit code {code}")
    return [Row(bench_id, scratch.name, "(the benchmark did not finish)", status=ERROR,
                detail=last).as_dict()]


def module_facts() -> dict[str, dict]:
    """What the report shows of each benchmark's module, read from its source (this process
    imports no Django): its docstring (``about``), its ``GAP`` text, and the gunicorn
    workers it serves with (``workers``: its own WORKERS, else the server's default when it
    uses ``Gunicorn``; None when it serves nothing)."""
    facts = {}
    for bench_id, module in MODULES.items():
        tree = ast.parse((ROOT / (module.replace(".", "/") + ".py")).read_text())
        constants = {
            target.id: node.value for node in tree.body if isinstance(node, ast.Assign)
            for target in node.targets if isinstance(target, ast.Name)
        }
        serves = any(isinstance(node, ast.ImportFrom) and node.module == "server"
                     and any(alias.name == "Gunicorn" for alias in node.names)
                     for node in tree.body)
        workers = ast.literal_eval(constants["WORKERS"]) if "WORKERS" in constants else (
            SERVER_WORKERS if serves else None)
        facts[bench_id] = {
            "about": ast.get_docstring(tree) or "",
            "gap": ast.literal_eval(constants["GAP"]) if "GAP" in constants else "",
            "workers": workers,
        }
    return facts


def main(argv=None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    load = {"start": load_average()}
    git = report.git_state()  # the tree as it is measured, before the run writes anything
    rows: list[dict] = []
    versions: dict[str, str] = {}
    url = os.environ.get("DATABASE_URL")
    kinds = [SqliteScratch] + ([PostgresScratch] if is_postgres(url) else [])
    with tempfile.TemporaryDirectory(prefix="flakeboard-bench-") as tmp:
        workdir = Path(tmp)
        env = bench_env(workdir)
        for kind in kinds:
            print(f"== {kind.name}" + (f" on {redact(url)}" if kind is PostgresScratch else ""),
                  file=sys.stderr, flush=True)
            scratch = kind(url, workdir, env) if kind is PostgresScratch else kind(workdir, env)
            try:
                versions[scratch.name] = scratch.version()
                for bench_id in args.selected:
                    if bench_id in NO_DATABASE and kind is not SqliteScratch:
                        continue
                    began = time.monotonic()
                    print(f"-- {bench_id} on {scratch.name}", file=sys.stderr, flush=True)
                    rows += run_worker(bench_id, scratch, args.scale, workdir, env)
                    print(f"   {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
            finally:
                scratch.close()
    load["end"] = load_average()
    scale_arg = "" if args.scale == 1 else f" BENCH_SCALE={args.scale:g}"
    facts = module_facts()
    workers = {bench_id: facts[bench_id]["workers"] for bench_id in args.selected
               if facts[bench_id]["workers"]}
    payload = {
        "generated": report.stamp(),
        "command": f"make bench{scale_arg}",
        **git,
        "scale": args.scale,
        "duration_s": round(time.monotonic() - started, 1),
        "machine": report.machine(versions, load, workers),
        "load_warning": report.load_check(load, rows),
        "rows": rows,
    }
    json_path = (args.out or ROOT / "bench") / "results.json"
    md_path = (args.out or ROOT / "docs") / "benchmarks.md"
    report.write_json(json_path, payload)
    report.write_markdown(md_path, payload,
                          {bench_id: f["about"] for bench_id, f in facts.items()},
                          {bench_id: f["gap"] for bench_id, f in facts.items()})
    print()
    print(report.text_table(rows))
    missed = sum(row["status"] == MISSED for row in rows)
    print(f"\n{len(rows)} figures, {missed} goals missed; {payload['duration_s']:.0f} s. "
          f"Wrote {json_path} and {md_path}.")
    if warning := report.load_warning(payload):
        print(f"WARNING: {warning}", file=sys.stderr)
    return 1 if any(row["status"] == ERROR for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
