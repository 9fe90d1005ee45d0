"""Flakeboard's CI client: gate a patch, measure the flake targets, fetch the quarantine
ledger, upload a flake report or signal records, print what the board decided for each
node, and exit with the gate's code.

One file, standard library only. Fetch it from the board itself:

    curl -fsSO "$FLAKEBOARD_URL/ci/flakeboard_ci.py"

    python3 flakeboard_ci.py ledger                  # writes flake_ledger.json
    python3 flakeboard_ci.py ledger --cache .flakeboard-cache --offline-max-age 6h
    FLAKE_RUNS=200 TODAY=2026-10-15 python3 flakeboard_ci.py measure   # flake_targets.txt
    python3 flakeboard_ci.py measure targets.txt --runs 200 --workers 4 --upload --commit "$SHA"
    python3 flakeboard_ci.py report flake-report.json --commit "$SHA" --branch main
    python3 flakeboard_ci.py signals signals.json --patch "$PATCH_ID"
    python3 flakeboard_ci.py junit junit.xml --commit "$SHA" --job py312 --attempt 1
    python3 flakeboard_ci.py pin --fixtures tests/fixtures --seed 9137
    PATCH_SEED=9137 python3 flakeboard_ci.py gate tests/ -m "not slow" --patch "$PATCH_ID" \
        --commit "$SHA" --fixtures tests/fixtures --upload

`gate` runs pytest once over the selection (the arguments it does not know are pytest's),
with this file as the plugin that records each selected node's outcome: pass; fail (a
failure, an error in setup or teardown, a strict xpass); not_run (a skip, a node the session
stopped before, a file that failed to collect, sent as one node). Each record carries the
fixture manifest of --fixtures with the PATCH_SEED in force, and `frozen` with its expiry for
a node with an unexpired ledger entry (read from the board at run time, through --cache when
it is down; --ledger FILE reads `ledger --full`'s file instead). --deselect-frozen leaves
those out of the run and the batch. Without --upload it writes signals.json and judges the
records here with the board's precedence table; an empty selection holds (no_evidence).
--diff RANGE classifies the patch by the added lines of `git diff --unified=0 RANGE`'s
source files that touch concurrency or time (RISKY_PATTERNS): low (none), medium (1 to
MEDIUM_MAX_LINES), high (more); the class and its count go into the batch. --measure then
asks the board for the selection's tiers, measures the tier-2 nodes that ran in process, as
`measure` does, with min_runs, 2 x or 4 x min_runs runs by class (low without --diff), writes
--report and gates it (here, or on the board beside the batch with --upload): exit 1 when
the batch rejects or the report fails, else 2 when the batch holds, else 0.
`pin` prints the manifest's digest and the seed, for a lead to set as the suite's pin.

`measure` is the background article's budget script, made fast: the same
flake_targets.txt, FLAKE_RUNS (default 200) and TODAY (default today, UTC), run i with
PATCH_SEED=seed_base+i (9137) and PYTHONHASHSEED=0, the same flake-report.json and the same
OK/WARN/FAIL lines against flake_ledger.json (exit 1 on any FAIL). It needs no board and no
token unless --upload. Run it with the project's own Python (3.8+, with its pytest): each of
--workers pytest processes loads this file as a plugin (-p flakeboard_ci), collects once
and repeats the tests in process, each repeat with fresh function-scoped fixtures. A target
stops early once it is over budget with 95% confidence (--exact: never). One whose repeats
all fail is run alone and after its module in fresh processes, and classified stable,
flaky, broken, order_dependent or repeat_unsafe (measured again with a process per run).
--fresh runs a process per run throughout, in parallel: needed by tests that read
PATCH_SEED at import time, which in process see the first seed only. --timeout stops a
hung run and counts it as a failure.

`junit` uploads JUnit XML files (any common producer's) as passive evidence and prints
the tests newly seen flaky: a pass and a failure in one job of the commit. It never fails
the job on what it finds.

`report` and `signals` print the failing nodes first. --format text|github|gitlab|markdown|json
picks the output (github when $GITHUB_ACTIONS is true, gitlab when $GITLAB_CI is true);
--codequality PATH also writes a GitLab Code Quality report.

`ledger --cache DIR` keeps the last good ledger in DIR and revalidates it (If-None-Match).
When the board cannot be reached, a cached ledger younger than --offline-max-age (default
6h) is written instead, with a warning, and the command exits 0; an older cache fails
closed (exit 3). A refusal is never covered by the cache (exit 4).

Environment:
    FLAKEBOARD_URL     the board, e.g. https://flakeboard.example.com (required but for
                       measure without --upload)
    FLAKEBOARD_TOKEN   an API token of the suite: read for `ledger`, write for uploads
    FLAKEBOARD_ID_TOKEN  instead of a token, the CI's OIDC id token for a suite that
                       trusts its CI (GitLab: `id_tokens:`); it wins over FLAKEBOARD_TOKEN.
                       On GitHub Actions with `permissions: id-token: write` and no
                       FLAKEBOARD_TOKEN, the client asks for one (ACTIONS_ID_TOKEN_REQUEST_URL)
    FLAKEBOARD_SUITE   the suite's slug (optional with a token: by default, its own suite;
                       required with an id token)
    FLAKE_RUNS, TODAY  measure's runs per target and gate date, as the budget script reads them

Exit codes:
    0  report passes (OK or WARN) / batch accepted / ledger fetched / junit files stored /
       pin printed
    1  report fails / batch rejected
    2  batch on hold
    3  the board could not be reached (network, DNS, timeout, 502-504)
    4  the board refused the request (token, suite, invalid upload, ...): see the message
    64 wrong usage or unreadable input file; for measure also a target that collects
       nothing or more than one test, no runs, no pytest in the interpreter; for gate a
       pytest that could not run the selection or a --diff git cannot give; for pin and
       gate a symlink among the fixtures (pin also a missing fixture folder)
"""

from __future__ import annotations

import argparse
import sys

VERSION = "1"
# The served file's build: a hash of its sources, which client/build.py stamps here and
# the board sends as the file's ETag ("unbuilt": run from client/src itself).
SOURCE_HASH = "unbuilt"
# Sent with every request; the board answers BOARD_NOTICE_HEADER when it serves another.
CLIENT_HEADER = "Flakeboard-Client"
BOARD_NOTICE_HEADER = "Flakeboard-Client-Notice"
EXIT_UNREACHABLE = 3
EXIT_REFUSED = 4
EXIT_USAGE = 64
UNREACHABLE_STATUSES = (502, 503, 504)
FORMATS = ("text", "github", "gitlab", "markdown", "json")


class Unreachable(Exception):
    pass


class Refused(Exception):
    def __init__(self, status, body):
        super().__init__(status)
        self.status = status
        self.body = body


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):
        # argparse's own exit code 2 would read as "hold".
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")
