"""A gunicorn server for the HTTP benchmarks, and a load generator to drive it.

The server runs with the benchmark process's own environment (settings, scratch database,
static root), on a free local port. Load comes from wrk when it is installed, else from a
small threaded Python client.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from .measure import NOT_REPORTED, Row, proc_status_bytes

ROOT = Path(__file__).resolve().parent.parent
WORKERS = 2
CLIENTS = 16


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Gunicorn:
    """``with Gunicorn(log) as server:`` serves the project; ``server.url(path)``."""

    def __init__(self, log: Path, workers: int = WORKERS, timeout: int = 600,
                 threads: int = 1):
        self.log_path = log
        self.workers = workers
        self.threads = threads  # above 1: gunicorn's gthread workers
        self.timeout = timeout  # gunicorn's worker timeout, in seconds (its own default: 30)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> Gunicorn:
        self.log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "flakeboard.wsgi:application",
             "--bind", f"127.0.0.1:{self.port}", "--workers", str(self.workers),
             "--timeout", str(self.timeout), "--log-level", "warning",
             "--threads", str(self.threads)],
            cwd=ROOT, env=os.environ.copy(), stdout=self.log, stderr=self.log,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {self.log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url("/healthz"), timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.__exit__(None, None, None)
        raise RuntimeError("gunicorn did not answer /healthz within 60 s")

    def worker_pids(self) -> list[int]:
        """The pids of gunicorn's worker processes (the master's children)."""
        if self.proc is None:
            return []
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == self.proc.pid:
                    pids.append(int(entry.name))
        return sorted(pids)

    def worker_memory(self) -> dict[int, dict[str, int]]:
        """Each worker's resident set now (``rss``) and its peak so far (``peak``), in
        bytes, from /proc/<pid>/status (VmRSS, VmHWM); empty where /proc cannot tell."""
        found = {}
        for pid in self.worker_pids():
            rss, peak = proc_status_bytes(pid, "VmRSS"), proc_status_bytes(pid, "VmHWM")
            if rss is not None and peak is not None:
                found[pid] = {"rss": rss, "peak": peak}
        return found

    def reset_peaks(self) -> None:
        """Start each worker's peak (VmHWM) again from its resident set now, so that the
        next reading is the peak of what came since (Linux: /proc/<pid>/clear_refs)."""
        for pid in self.worker_pids():
            with contextlib.suppress(OSError):
                Path(f"/proc/{pid}/clear_refs").write_text("5")

    def warm_up(self, path: str, requests: int | None = None) -> None:
        """Send concurrent GETs to ``path`` so that every worker, not only the one that
        answered /healthz, has loaded the project's URLs and views (imported at the first
        request) before anything is measured."""
        requests = requests or 4 * self.workers
        threads = [threading.Thread(target=fetch, args=(self.url(path),))
                   for _ in range(requests)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def fetch(url: str, headers: dict | None = None, body: bytes | None = None,
          method: str = "GET") -> tuple[int, dict, bytes]:
    """One request; the status, headers and body (an error status is not an exception)."""
    request = urllib.request.Request(url, data=body, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=600) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@dataclass
class Load:
    requests: int
    seconds: float
    bad: int  # answers that were neither 2xx nor 3xx, plus socket errors
    tool: str
    statuses: dict = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def load_tool() -> str:
    return "wrk" if shutil.which("wrk") else "python"


# Why a full run reports no load figure without wrk: Python threads saturate before the
# board does, so the ratio would measure them (B2-304 read 0.50x with wrk, 0.84x without).
WRK_MISSING = ("not reported: wrk is not installed (apt-get install -y wrk; make bench installs "
               "it when it can), and Python threads load the client, not the board")


def refused_without_wrk(bench_id: str, backend: str, whats: tuple[str, ...],
                        scale: float) -> list[Row]:
    """The rows of a full run's load benchmark without wrk, each saying why it reports no
    figure; none when wrk is there, or for a smoke run (Python threads suffice there)."""
    if scale < 1 or load_tool() == "wrk":
        return []
    return [Row(bench_id, backend, what, status=NOT_REPORTED, detail=WRK_MISSING)
            for what in whats]


def wrk_version() -> str:
    if not shutil.which("wrk"):
        return ""
    done = subprocess.run(["wrk", "-v"], capture_output=True, text=True, check=False)
    first = (done.stdout or done.stderr).splitlines()
    return first[0].split(" Copyright")[0] if first else "wrk"


def drive(url: str, headers: dict, seconds: float, clients: int = CLIENTS) -> Load:
    """Keep ``clients`` connections busy on one URL for ``seconds``."""
    if load_tool() == "wrk":
        return _wrk(url, headers, seconds, clients)
    return _python_load(url, headers, seconds, clients)


def _wrk(url, headers, seconds, clients) -> Load:
    command = ["wrk", f"-t{min(2, clients)}", f"-c{clients}", f"-d{max(1, round(seconds))}s",
               "--timeout", "30s"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    done = subprocess.run([*command, url], capture_output=True, text=True, check=True)
    out = done.stdout
    total = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", out)
    if total is None:
        raise RuntimeError(f"unexpected wrk output:\n{out}")
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[total.group(3)]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    socket_errors = sum(int(g) for g in errors.groups()) if errors else 0
    return Load(int(total.group(1)), float(total.group(2)) * scale,
                (int(bad.group(1)) if bad else 0) + socket_errors, "wrk")


def _python_load(url, headers, seconds, clients) -> Load:
    parts = urllib.parse.urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    counts: list[dict] = [{} for _ in range(clients)]
    deadline = time.monotonic() + seconds

    def client(index):
        conn = None
        while time.monotonic() < deadline:
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
                conn.request("GET", path, headers=headers)
                answer = conn.getresponse()
                answer.read()
                counts[index][answer.status] = counts[index].get(answer.status, 0) + 1
                if answer.will_close:
                    conn.close()
                    conn = None
            except OSError:
                counts[index][0] = counts[index].get(0, 0) + 1
                conn = None
        if conn is not None:
            conn.close()

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    statuses: dict[int, int] = {}
    for part in counts:
        for status, n in part.items():
            statuses[status] = statuses.get(status, 0) + n
    good = sum(n for s, n in statuses.items() if 200 <= s < 400)
    return Load(good, elapsed, sum(statuses.values()) - good, "python", statuses)
