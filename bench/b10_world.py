"""B10's world (bench/b10_company.py): the company's suites and their history, written with
COPY as the ingest would have left it: 30 days of JUnit rollups for every suite, the raw rows
of the largest suite's last days within a setup budget, and the database's size by kind."""

from __future__ import annotations

import shutil
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta

from django.db import connection

from flakeboard.rules.signatures import signature
from junit import partitions
from junit.ingest import RESULT_COLUMNS
from junit.models import CaseResult, JUnitFile, NodeDay, SignatureDay
from junit.summary import rebuild_summary
from ledger.models import Node
from ledger.tokens import token_create

from . import b7_junit, data
from .measure import fmt_bytes, progress, scaled

ID = "B10"
SUITES = 20
SHARD = 5_000  # testcases a file: one shard of one job's run
LARGEST_SHARDS = 10  # the largest suite: 50,000 tests
OTHER_SHARDS = (4, 1)  # the other suites, from 20,000 tests down to 5,000
ROLLUP_DAYS, RAW_DAYS = 30, 7
RUNS_PER_DAY = 20  # each test's runs a day: 10 commits, each in B7's two jobs
BRANCH = "main"
SETUP_BUDGET_S = 420.0  # no raw day is begun that would end past this
MIN_FREE_DISK = 20 * 2**30
RAW = (JUnitFile, CaseResult)
ROLLED_UP = (NodeDay, SignatureDay)
NODE_DAY_COLUMNS = ("suite_id", "node_id", "day", "branch", "runs", "failures",
                    "flaky_failures", "flaky_commits")
SIGNATURE_DAY_COLUMNS = ("suite_id", "node_id", "day", "branch", "signature", "failures")


@dataclass
class Company:
    """One suite of the company: its tests by shard (B7's ``Tests``), its nodes' keys in
    the same order, its write token and its files (two per shard)."""

    suite: object
    shards: list[b7_junit.Tests]
    node_pks: list[int]
    token: str = ""
    bodies: list[list[bytes]] = field(default_factory=list)

    @property
    def roles(self) -> list[str]:
        return [role for tests in self.shards for role in tests.roles]

    def signatures(self) -> dict[int, str]:
        """The failure signature of each test that fails now and then: its first message's."""
        size = len(self.shards[0].roles)
        return {i: signature(self.shards[i // size].messages[i % size][0].format(a=2, b=1))
                for i, role in enumerate(self.roles) if role == "flaky" or i % 100 == 0}




def shard_counts(scale: float) -> tuple[int, list[int]]:
    """Testcases a file, and each suite's shards (the largest first)."""
    most, least = OTHER_SHARDS
    others = [max(least, round(most * (least / most) ** (k / (SUITES - 2))))
              for k in range(SUITES - 1)]
    return scaled(scale, SHARD, 20), [LARGEST_SHARDS, *others]


def _suites(scale: float, today: date) -> list[Company]:
    shard, counts = shard_counts(scale)
    companies = []
    for k, shards in enumerate(counts):
        suite = data.make_suite(f"b10-{k:02d}")
        ids = data.nodeids(shard * shards, prefix=f"tests{k:02d}")
        nodes = data.make_nodes(suite, ids, today)
        _, token = token_create(suite=suite, scope="write", actor="bench", name="bench")
        companies.append(Company(suite, [b7_junit.Tests(ids[i:i + shard])
                                         for i in range(0, len(ids), shard)],
                                 [node.pk for node in nodes], token))
    largest = companies[0]
    flaky = [pk for pk, role in zip(largest.node_pks, largest.roles, strict=True)
             if role == "flaky"]
    entries = data.make_entries(largest.suite, Node.objects.filter(pk__in=flaky[::2])
                                .order_by("pk"), today, seed=10)
    data.creation_events(largest.suite, entries)
    return companies


def _day_counts(i: int, role: str, offset: int) -> tuple[int, int, int, int] | None:
    """A test's runs, failures, flaky failures and flaky commits on one day; None when it
    did not run (skipped). A flaky test is flaky on half the days; one test in a hundred
    fails once on a tenth of them."""
    if role == "skipped":
        return None
    turn = (i * 31 + offset * 17) % 100
    if role == "flaky" and turn < 50:
        flaky = 1 + turn % (RUNS_PER_DAY // 4)
        return RUNS_PER_DAY + flaky, flaky, flaky, min(flaky, RUNS_PER_DAY // 2)
    if i % 100 == 0 and turn < 10:
        return RUNS_PER_DAY + 1, 1, 0, 0
    return RUNS_PER_DAY, 0, 0, 0


def _rollups(company: Company, today: date) -> tuple[int, int]:
    """``ROLLUP_DAYS`` days of the suite's rollups: the NodeDay and SignatureDay rows."""
    suite_id, roles, sigs = company.suite.pk, company.roles, company.signatures()
    days = [(offset, data.db_date(today - timedelta(days=offset)))
            for offset in range(ROLLUP_DAYS)]

    def node_days():
        for offset, day in days:
            for i, pk in enumerate(company.node_pks):
                if counts := _day_counts(i, roles[i], offset):
                    yield (suite_id, pk, day, BRANCH, *counts)

    def signature_days():
        for offset, day in days:
            for i, sig in sigs.items():
                counts = _day_counts(i, roles[i], offset)
                if counts and counts[1]:
                    yield (suite_id, company.node_pks[i], day, BRANCH, sig, counts[1])

    return (data.insert_rows(NodeDay, NODE_DAY_COLUMNS, node_days()),
            data.insert_rows(SignatureDay, SIGNATURE_DAY_COLUMNS, signature_days()))


def run_commit(slug: str, run: int) -> str:
    return f"{zlib.crc32(f'{slug}-{run}'.encode()):08x}{run:06x}"


def _raw_day(company: Company, today: date, offset: int) -> tuple[int, int]:
    """One day of a suite's raw rows, as ``RUNS_PER_DAY`` runs of every shard would have
    left them: the files and testcase results written."""
    suite, roles, sigs = company.suite, company.roles, company.signatures()
    day = today - timedelta(days=offset)
    size, jobs = len(company.shards[0].roles), b7_junit.JOBS
    specs = [(run, s) for run in range(RUNS_PER_DAY) for s in range(len(company.shards))]
    skipped = [tests.roles.count("skipped") for tests in company.shards]
    files = JUnitFile.objects.bulk_create([
        JUnitFile(suite=suite, created_at=data.moment(day, 1 + run * 22 // RUNS_PER_DAY),
                  day=day, commit=run_commit(f"{suite.slug}-{offset}", run // len(jobs)),
                  branch=BRANCH, job=jobs[run % len(jobs)], uploaded_by="token fbw_bench (ci)",
                  digest=f"{offset:04d}{run:06d}{s:06d}".ljust(64, "0"), producer="pytest",
                  testcases=size, skipped=skipped[s], passed=size - skipped[s],
                  infrastructure_share=suite.junit_infrastructure_share)
        for run, s in specs], batch_size=1000)
    db_day = data.db_date(day)

    def outcome(i: int, run: int) -> tuple:
        """outcome, attempts, passes, failures, message, signature"""
        role = roles[i]
        if role == "skipped":
            return "skipped", 1, 0, 0, "", ""
        if role == "flaky" and (i + run) % 4 == 0:
            return "passed", 2, 1, 1, sigs[i], sigs[i]
        if i % 100 == 0 and run % 10 == 0:
            return "failed", 2, 0, 2, sigs[i], sigs[i]
        return "passed", 1, 1, 0, "", ""

    def results():
        for file, (run, s) in zip(files, specs, strict=True):
            for pos in range(size):
                i = s * size + pos
                kind, attempts, passes, failures, message, sig = outcome(i, run)
                # A test flaky within its file is flaky in its job: its failures count.
                flaky = failures if passes else 0
                yield (file.pk, company.node_pks[i], db_day, pos, kind, attempts, passes,
                       failures, flaky, 0.05 * attempts, message, sig)

    partitions.day_partition(day)
    return len(files), data.insert_rows(CaseResult, RESULT_COLUMNS, results())


def free_disk() -> int:
    """Bytes free on the database's disk (this machine's root where it cannot tell)."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW data_directory")
        where = cursor.fetchone()[0]
    try:
        return shutil.disk_usage(where).free
    except OSError:
        return shutil.disk_usage("/").free


def make_world(scale: float, today: date) -> tuple[list[Company], dict]:
    """The suites, their rollups and the largest's raw days; what was made, and in what
    time (the raw days stop at the setup budget or the disk's floor)."""
    started = time.monotonic()
    progress(f"{ID}: {SUITES} suites and their nodes")
    companies = _suites(scale, today)
    made = Counter(suites=len(companies), tests=sum(len(c.node_pks) for c in companies),
                   largest=len(companies[0].node_pks))
    progress(f"{ID}: {made['tests']:,} tests ({made['largest']:,} in the largest); "
             f"{ROLLUP_DAYS} days of their rollups")
    for company in companies:
        node_days, signature_days = _rollups(company, today)
        made.update(node_days=node_days, signature_days=signature_days)
    made["rolled_up_testcases"] = made["tests"] * RUNS_PER_DAY * ROLLUP_DAYS
    # The summary the pages read, as the ingest and the daily prune keep it.
    summed = time.monotonic()
    for company in companies:
        rebuild_summary(company.suite, today)
    made["summary_s"] = round(time.monotonic() - summed, 1)
    progress(f"{ID}: every suite's summary of its last 30 days in {made['summary_s']:.0f} s")
    made["rollups_s"] = round(time.monotonic() - started, 1)
    progress(f"{ID}: {made['node_days']:,} NodeDay and {made['signature_days']:,} "
             f"SignatureDay rows ({made['rollups_s']:.0f} s into the setup)")
    day_s = 0.0
    for offset in range(RAW_DAYS):
        spent, free = time.monotonic() - started, free_disk()
        if offset >= 2 and (spent + day_s > SETUP_BUDGET_S or free < MIN_FREE_DISK):
            progress(f"{ID}: the raw rows stop at {offset} days: {spent:.0f} s into the "
                     f"setup, a day takes {day_s:.0f} s, {fmt_bytes(free)} free")
            break
        began = time.monotonic()
        files, results = _raw_day(companies[0], today, offset)
        day_s = time.monotonic() - began
        made.update(raw_days=1, files=files, case_results=results)
        progress(f"{ID}: raw day -{offset}: {files:,} files, {results:,} testcase results "
                 f"in {day_s:.0f} s")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    made["setup_s"] = round(time.monotonic() - started, 1)
    return companies, dict(made)


def relation_bytes(models) -> dict[str, int]:
    """Each table's bytes with its indexes and TOAST; a partitioned table's, its
    partitions' (``pg_partition_tree`` lists nothing for a plain table)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT t, COALESCE((SELECT sum(pg_total_relation_size(relid)) "
                       "FROM pg_partition_tree(t::regclass)), "
                       "pg_total_relation_size(t::regclass))::bigint "
                       "FROM unnest(%s::text[]) t", [[model._meta.db_table for model in models]])
        return dict(cursor.fetchall())


def database_sizes(made: dict) -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        database = cursor.fetchone()[0]
    raw, rolled_up = relation_bytes(RAW), relation_bytes(ROLLED_UP)
    sizes = {"database": database, "raw": sum(raw.values()),
             "rolled_up": sum(rolled_up.values()), "tables": {**raw, **rolled_up}}
    progress(f"{ID}: setup {made['setup_s']:.0f} s; database {fmt_bytes(database)}: raw rows "
             f"{fmt_bytes(sizes['raw'])} ({made['files']:,} files, {made['case_results']:,} "
             f"results over {made['raw_days']} days), "
             f"rollups {fmt_bytes(sizes['rolled_up'])} ({made['node_days']:,} NodeDay, "
             f"{made['signature_days']:,} SignatureDay)")
    return sizes
