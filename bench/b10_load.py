"""B10's load (bench/b10_company.py): the company's uploaders, the pages read beside them
and the CPU they cost, and one more upload under cProfile."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import date
from urllib.parse import urlencode

from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from ledger.models import Node

from . import b7_junit, data, profiling
from .b8_largest import cpu_seconds
from .b9_prune import Sampler
from .b10_world import BRANCH, Company, run_commit
from .server import Gunicorn, fetch

UPLOADERS = 8
# Seconds from one read's start to the next's (or at once after a slower one): CI's ledger
# GETs at 10 a second on each pool, each page viewed once a second.
LEDGER_EVERY, PAGE_EVERY = 0.1, 1.0
SHARED = "ledger (uploads' workers)"


class CpuWatch(threading.Thread):
    """The CPU seconds of gunicorn's workers and of the database's backends that serve
    this database (all but the watcher's own), read from /proc every half second while the
    load runs (a process that exits loses at most its last half second, one that starts
    counts from nothing); and this process's own (the uploaders and readers: ``client``)."""

    def __init__(self, server: Gunicorn):
        super().__init__(daemon=True)
        self.server = server
        self.stop = threading.Event()
        self.first: dict[tuple[str, int], float] = {}
        self.last: dict[tuple[str, int], float] = {}
        self.client = time.process_time()
        self.read(first=True)

    def read(self, first: bool = False) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = "
                           "current_database() AND pid <> pg_backend_pid()")
            backends = [pid for (pid,) in cursor.fetchall()]
        for key in [*(("gunicorn", pid) for pid in self.server.worker_pids()),
                    *(("postgresql", pid) for pid in backends)]:
            if (seconds := cpu_seconds(key[1])) is not None:
                self.first.setdefault(key, seconds if first else 0.0)
                self.last[key] = seconds

    def run(self) -> None:
        try:
            while not self.stop.wait(0.5):
                self.read()
        finally:
            connection.close()

    def finish(self) -> dict[str, float]:
        self.stop.set()
        self.join()
        self.read()
        used = Counter()
        for key, seconds in self.last.items():
            used[key[0]] += seconds - self.first[key]
        return {"gunicorn": used["gunicorn"], "postgresql": used["postgresql"],
                "client": time.process_time() - self.client}


@dataclass
class Upload:
    seconds: float
    status: int
    testcases: int
    ended: float


class Uploaders:
    """``UPLOADERS`` threads POSTing the company's CI jobs, each the next of the round (every
    suite's shards in both jobs, a new commit of each suite every round, each suite's files
    spread evenly over it), until ``seconds`` pass."""

    def __init__(self, server: Gunicorn, companies: list[Company]):
        self.server, self.companies = server, companies
        jobs = len(b7_junit.JOBS)
        # Each suite's files spread evenly over the round: (suite, shard, job).
        self.round = [(k, m // jobs, m % jobs) for _, k, m in sorted(
            ((m + 0.5) / (jobs * len(c.shards)), k, m)
            for k, c in enumerate(companies) for m in range(jobs * len(c.shards)))]
        self.next = itertools.count()
        self.lock = threading.Lock()
        self.done: list[Upload] = []
        self.answers: Counter = Counter()

    def _one(self) -> None:
        with self.lock:
            n = next(self.next)
        rnd, (k, s, j) = n // len(self.round), self.round[n % len(self.round)]
        company = self.companies[k]
        query = urlencode({"commit": run_commit(company.suite.slug, rnd), "branch": BRANCH,
                           "job": b7_junit.JOBS[j]})
        started = time.perf_counter()
        status, _, answer = fetch(
            self.server.url(f"/api/v1/suites/{company.suite.slug}/junit?{query}"),
            {"Authorization": f"Bearer {company.token}", "Content-Type": "application/xml"},
            company.bodies[s][rnd % 2], method="POST")
        ended = time.perf_counter()
        testcases = json.loads(answer)["counts"]["testcases"] if status == 201 else 0
        with self.lock:
            self.done.append(Upload(ended - started, status, testcases, ended))
            self.answers[status] += 1

    def run(self, seconds: float) -> float:
        """Upload for ``seconds``; the time from the first upload sent to the last answer."""
        started = time.perf_counter()
        deadline = started + seconds

        def uploader():
            while time.perf_counter() < deadline:
                self._one()

        threads = [threading.Thread(target=uploader) for _ in range(UPLOADERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return max(upload.ended for upload in self.done) - started


def write_bodies(companies: list[Company]) -> float:
    """Two files of every shard (who flakes differs); the XML bytes per testcase."""
    size = count = 0
    for company in companies:
        company.bodies = [[tests.file(len(tests.roles), seed) for seed in (0, 1)]
                          for tests in company.shards]
        size += sum(len(body) for files in company.bodies for body in files)
        count += sum(2 * len(tests.roles) for tests in company.shards)
    return size / count


def largest_pages(largest: Company, read: str) -> dict[str, tuple[str, dict]]:
    """The largest suite's pages (signed in as a staff user; the cookie is added later)
    and its targets file (a read token): {name: (path, headers)}."""
    slug = largest.suite.slug
    flaky = next(pk for pk, role in zip(largest.node_pks, largest.roles, strict=True)
                 if role == "flaky")
    key = Node.objects.get(pk=flaky).key
    return {
        "flaky-tests page": (f"/suites/{slug}/flaky/", {}),
        "targets file": (f"/api/v1/suites/{slug}/targets", {"Authorization": f"Bearer {read}"}),
        "node page (a flaky test)": (f"/suites/{slug}/nodes/{key}/", {}),
        "overview": (f"/suites/{slug}/", {}),
    }


def count_queries(pages: dict[str, tuple[str, dict]]) -> tuple[dict[str, int], str]:
    """Each page's queries, counted in this process on a second request; the session
    cookie of the staff user the pages were fetched as."""
    client = Client()
    client.force_login(data.staff_user())
    counts = {}
    for name, (path, headers) in pages.items():
        if (status := client.get(path, headers=headers).status_code) != 200:
            raise RuntimeError(f"{path} answered {status}")
        with CaptureQueriesContext(connection) as queries:
            client.get(path, headers=headers)
        counts[name] = len(queries)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    return counts, f"{cookie.key}={cookie.value}"


def ingest_under_load(server: Gunicorn, reads: Gunicorn, companies: list[Company], pages: dict,
            ledger: tuple, seconds: float) -> dict:
    """The uploads, and beside them the ledger's and the pages' samplers (on the reads'
    workers, and the ledger's also on the uploads' workers) and the CPU watch."""
    # Each page at its own phase of the second: started together, the four were read at
    # the same instants and waited on each other (the node page's median 107 to 116 ms with
    # no upload running, 43 to 45 ms read a quarter of a second apart).
    samplers = {name: Sampler(reads.url(path), headers, PAGE_EVERY,
                              phase=i * PAGE_EVERY / len(pages))
                for i, (name, (path, headers)) in enumerate(pages.items())}
    samplers["ledger"] = Sampler(reads.url(ledger[0]), ledger[1], LEDGER_EVERY)
    samplers[SHARED] = Sampler(server.url(ledger[0]), ledger[1], LEDGER_EVERY)
    watch = CpuWatch(server)
    watch.start()
    for sampler in samplers.values():
        sampler.start()
    uploaders = Uploaders(server, companies)
    try:
        wall = uploaders.run(seconds)
    finally:
        for sampler in samplers.values():
            sampler.stop.set()
        for sampler in samplers.values():
            sampler.join()
        cpu = watch.finish()
    return {"wall": wall, "uploads": uploaders.done, "answers": uploaders.answers,
            "samplers": samplers, "cpu": cpu}


def profiled_ingest(largest: Company, today: date) -> dict:
    """One more file of the largest suite (a new commit's first shard), through
    ``junit_ingest`` in this process, under cProfile."""
    body = largest.bodies[0][0]
    return profiling.profile(lambda: b7_junit.ingest(largest.suite, body, 10**6, today, 0))
