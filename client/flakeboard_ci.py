#!/usr/bin/env python3
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
    FLAKEBOARD_SUITE   the suite's slug (optional: by default, the token's own suite)
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
import calendar
import collections
import contextlib
import copy
import gzip
import hashlib
import heapq
import http.client
import itertools
import json
import math
import multiprocessing.connection
import os
import queue
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
import urllib.error
import urllib.parse
import urllib.request

# --- core.py: constants, exceptions, the argument parser ------------------------------


VERSION = "1"
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


# --- board.py: talking to the board ---------------------------------------------------


class Board:
    def __init__(self, url, token, *, timeout, retries):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries

    def call(self, method, path, *, query=None, body=None, headers=None):
        """The decoded JSON answer, its headers; Refused or Unreachable otherwise."""
        _, raw, headers = self.fetch(method, path, query=query, body=body, headers=headers)
        return decoded(raw), headers

    def fetch(self, method, path, *, query=None, body=None, headers=None):
        """The status (2xx or 304), raw body and headers of the answer; Refused or
        Unreachable otherwise."""
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v})
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json",
            "User-Agent": f"flakeboard-ci/{VERSION}",
            **(headers or {}),
        }
        if body is not None:
            headers.setdefault("Content-Type", "application/json")
        attempt = 0
        while True:
            try:
                return self._once(url, method, headers, body)
            except Unreachable:
                # Uploads are idempotent (the board stores a body once), so a retry is safe.
                if attempt >= self.retries:
                    raise
                time.sleep(2 ** attempt)
                attempt += 1

    def _once(self, url, method, headers, body):
        request = urllib.request.Request(  # noqa: S310 (main() allows http and https only)
            url, data=body, headers=headers, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                return response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as exc:
            if exc.code == 304:  # Not Modified: the If-None-Match copy is current
                return exc.code, b"", dict(exc.headers)
            if exc.code in UNREACHABLE_STATUSES:
                raise Unreachable(f"the board answered {exc.code} {exc.reason}") from None
            raise Refused(exc.code, _json(_read_error(exc))) from None
        except (OSError, http.client.HTTPException) as exc:
            # URLError, refused connections, timeouts, resets, an answer cut short alike.
            reason = getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}"
            raise Unreachable(str(reason)) from None


def _read_error(exc):
    try:
        return exc.read()
    except (OSError, http.client.HTTPException):
        return b""


def decoded(raw):
    """A 2xx answer's JSON; Unreachable when it is not JSON (an answer cut short)."""
    answer = _json(raw)
    if not isinstance(answer, dict) or answer.get("error") == "not_json":
        raise Unreachable("the board's answer was cut short or is not JSON")
    return answer


def _json(raw):
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {"error": "not_json", "message": raw[:300].decode("utf-8", "replace")}


def suite_slug(board, given):
    if given:
        return given
    answer, _ = board.call("GET", "/api/v1/token")
    return answer["suite"]["slug"]


def read_upload(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def _upload(board, args, endpoint, body=None, **meta):
    """POST ``body`` (by default the upload file) to the suite's ``endpoint``: the board's
    decoded answer."""
    slug = suite_slug(board, args.suite)
    query = dict(meta, evidence=args.evidence, dry_run="1" if args.dry_run else "")
    answer, _ = board.call("POST", f"/api/v1/suites/{quote(slug)}/{endpoint}", query=query,
                           body=read_upload(args.file) if body is None else body)
    return answer


def quote(slug):
    return urllib.parse.quote(slug, safe="")


# --- outputs.py: presenting the board's answer ----------------------------------------


Row = collections.namedtuple("Row", "node status reason flags line url")
# Worst first: rows that fail the job (FAIL, REJECT, then HOLD), warnings, passing rows.
RANK = {"FAIL": 0, "REJECT": 0, "HOLD": 1, "WARN": 2, "OK": 3, "ACCEPT": 3}
FAILING, WARNING, PASSING = ("FAIL", "REJECT", "HOLD"), ("WARN",), ("OK", "ACCEPT")


def view(answer, kind):
    """The answer's rows worst first, its summary parts (head, reason, details), and the
    word for a passing row."""
    if kind == "report":
        rows = [Row(m["nodeid"], m["status"], m["reason"], m["flags"], _measurement_line(m),
                    m.get("url")) for m in answer["measurements"]]
        counts, share = answer["counts"], answer["share"]
        details = (f"{counts['measurements']} measurements, {counts['fail']} FAIL, "
                   f"{counts['warn']} WARN, {counts['ok']} OK; quarantined share "
                   f"{share['share']:.1%} of {share['test_set_size']} (cap {share['cap']:.1%})")
        head, passing = f"report {answer['status']}", "OK"
    else:
        rows = []
        for r in answer["records"]:
            verdict = r["verdict"].upper()
            rows.append(Row(r["node"], verdict, r["reason"], r["flags"],
                            f"{verdict:<6} {r['node']}: {r['reason']}"
                            f"{_entry_note(r.get('entry'))}{_flags(r['flags'])}",
                            r.get("url")))
        reasons = sorted(answer["reason_counts"].items())
        details = (f"{len(rows)} records; "
                   f"{', '.join(f'{reason} {n}' for reason, n in reasons) or 'no records'}")
        head, passing = f"batch {answer['verdict'].upper()}", "ACCEPT"
    rows.sort(key=lambda row: RANK[row.status])
    return rows, (head, answer["reason"], details), passing


def _measurement_line(m):
    line = (f"{m['status']:<4} {m['nodeid']}: {m['reason']} "
            f"(upper95={m['upper95']:.4f}, {m['fails']}/{m['n']} failed)")
    return line + _entry_note(m.get("entry")) + _flags(m["flags"])


def _entry_note(entry):
    """What the node's ledger entry did for the row: "quarantined until ... by ...", or,
    for a tier violation, why the entry is void and what rule made it so."""
    if not entry:
        return ""
    if entry.get("state") != "tier_violation":
        return f"; quarantined until {entry['expires']} by {entry['owner']}"
    tier, rule = entry.get("tier"), entry.get("tier_rule")
    if tier is None:
        why = "the node is tier 0 or 1 now"
    elif rule is None:
        why = f"an upload stated tier {tier} for the node"
    else:
        why = f"the tier rule \u201c{rule}\u201d now makes the node tier {tier}"
    return (f"; its entry (until {entry['expires']}, by {entry['owner']}) is void: {why}, "
            f"and a tier {'0 or 1' if tier is None else tier} node may not be quarantined, "
            f"so it counts as unquarantined")


def _flags(flags):
    return f" [{', '.join(flags)}]" if flags else ""


def group(rows, statuses):
    return [row for row in rows if row.status in statuses]


def output_format(args, environ):
    if args.format:
        return args.format
    if environ.get("GITHUB_ACTIONS") == "true":
        return "github"
    if environ.get("GITLAB_CI") == "true":
        return "gitlab"
    return "text"


def present(answer, kind, args):
    """Print the answer in the chosen format; the board's exit code."""
    environ = os.environ
    fmt = output_format(args, environ)
    rows, summary, passing = view(answer, kind)
    if args.codequality:
        write_codequality(args.codequality, rows, args.only_failures)
    if fmt == "json":
        print(json.dumps(answer))
        return int(answer["exit_code"])
    if fmt == "markdown":
        sys.stdout.write(markdown_summary(answer, rows, summary, args.only_failures))
        return int(answer["exit_code"])
    failing, warning, passed = (group(rows, statuses) for statuses in (FAILING, WARNING, PASSING))
    shown = failing if args.only_failures else failing + warning
    passed_line = None
    if not args.only_failures and passed:
        passed_line = f"{len(passed)} {passing}"
        if not args.all:
            passed_line += ", not listed (--all lists them)"
    if fmt == "gitlab":
        with gitlab_section(f"flakeboard_{kind}", f"Flakeboard: {summary[0]} ({summary[1]})"):
            _print_lines(row.line for row in shown)
        if passed_line:
            with gitlab_section(f"flakeboard_{kind}_passing", passed_line, collapsed=True):
                _print_lines(row.line for row in passed if args.all)
    else:
        _print_lines(row.line for row in shown)
        if passed_line:
            _print_lines([row.line for row in passed] if args.all else [passed_line])
    if fmt == "github":
        _print_lines(github_annotations(failing if args.only_failures else rows,
                                        answer.get("url")))
        path = environ.get("GITHUB_STEP_SUMMARY")
        if path:
            used = os.path.getsize(path) if os.path.exists(path) else 0
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(markdown_summary(answer, rows, summary, args.only_failures,
                                              limit=SUMMARY_LIMIT - used))
    head, reason, details = summary
    print(f"{head} ({reason}): {details}")
    return _finish(answer)


def _print_lines(lines):
    for line in lines:
        print(line)


def _finish(answer):
    if answer.get("duplicate"):
        print("This body was uploaded before: the board answered its stored result.")
    if answer.get("dry_run"):
        print("Dry run: nothing was stored.")
    if answer.get("url"):
        print(answer["url"])
    print(f"exit code {answer['exit_code']}")
    return int(answer["exit_code"])


# --- GitHub Actions ------------------------------------------------------------------

ANNOTATIONS_SHOWN = 10  # GitHub shows a step's first 10 errors and first 10 warnings
SUMMARY_LIMIT = 1024 * 1024  # bytes of job summary a step may write


def github_data(text):
    """A workflow command's message, escaped as GitHub's runner reads it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(text):
    """A workflow command's property value (file=, title=)."""
    return github_data(text).replace(":", "%3A").replace(",", "%2C")


def node_file(node):
    """The file of a pytest node id: its part before the first ``::``."""
    return node.split("::", 1)[0]


def github_annotations(rows, url):
    """An ::error per failing row (worst first), a ::warning per WARN row, at most
    ANNOTATIONS_SHOWN of each, then a ::notice of how many were left out."""
    left_out = 0
    for command, statuses in (("error", FAILING), ("warning", WARNING)):
        chosen = group(rows, statuses)
        left_out += max(0, len(chosen) - ANNOTATIONS_SHOWN)
        for row in chosen[:ANNOTATIONS_SHOWN]:
            title = f"Flakeboard {row.status} {row.node}"
            yield (f"::{command} file={github_property(node_file(row.node))},"
                   f"title={github_property(title)}::{github_data(row.line)}")
    if left_out:
        where = f" and on the board: {url}" if url else ""
        yield "::notice::" + github_data(
            f"{left_out} more failing or warning nodes are not annotated (GitHub shows "
            f"{ANNOTATIONS_SHOWN} of each): they are in the job summary{where}")


# --- Markdown ------------------------------------------------------------------------

MARKDOWN_PUNCTUATION = set("!\"#$%'()*+,-./:;=?@[\\]^_`{|}~")
MARKDOWN_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\n": "\\\\n", "\r": "\\\\r"}


def markdown_text(text):
    """``text`` made inert in Markdown, a table cell included: punctuation backslash-escaped,
    ``&<>`` as entities, line ends as the two characters ``\\n``, outer white space kept."""
    out = []
    for char in str(text):
        if char in MARKDOWN_ENTITIES:
            out.append(MARKDOWN_ENTITIES[char])
        elif char in MARKDOWN_PUNCTUATION:
            out.append("\\" + char)
        else:
            out.append(char)
    escaped = "".join(out)
    # A table cell's outer white space would be trimmed: keep it as character references.
    core = escaped.strip()
    lead = escaped[:len(escaped) - len(escaped.lstrip())]
    trail = escaped[len(escaped.rstrip()):] if core else ""
    return "".join(f"&#{ord(c)};" for c in lead) + core + "".join(f"&#{ord(c)};" for c in trail)


def markdown_summary(answer, rows, summary, only_failures=False, limit=SUMMARY_LIMIT):
    """The answer as Markdown: the verdict line, a counts table, then the failing and the
    WARN rows, the table cut to keep the whole within ``limit`` bytes (the verdict line is
    always kept)."""
    head, reason, details = summary
    url = answer.get("url")
    link = f"[upload]({_markdown_url(url)})" if url else "dry run"
    verdict = (f"**Flakeboard: {markdown_text(head)}** ({markdown_text(reason)}) \u2014 "
               f"{markdown_text(details)}; exit code {answer['exit_code']}\n\n")
    counts = collections.Counter(row.status for row in rows)
    parts = [verdict, "| status | nodes |\n|---|---:|\n"]
    parts += [f"| {status} | {n} |\n" for status, n in sorted(counts.items(),
                                                              key=lambda i: RANK[i[0]])]
    parts.append("\n")
    listed = group(rows, FAILING) + ([] if only_failures else group(rows, WARNING))
    if listed:
        parts.append("| node | status | reason | flags | board |\n|---|---|---|---|---|\n")
    size = sum(len(part.encode()) for part in parts) + 1  # + the last line end
    for index, row in enumerate(listed):
        page = f"[node]({_markdown_url(row.url)})" if row.url else link
        line = (f"| {markdown_text(row.node)} | {row.status} | {markdown_text(row.reason)} | "
                f"{markdown_text(', '.join(row.flags))} | {page} |\n")
        cut = (f"| \u2026 {len(listed) - index} more rows left out: see the board "
               f"| | | | {link} |\n")
        reserve = 0 if index == len(listed) - 1 else len(cut.encode())
        if size + len(line.encode()) + reserve > limit:
            parts.append(cut)
            break
        parts.append(line)
        size += len(line.encode())
    return "".join(parts) + "\n"


def _markdown_url(url):
    return urllib.parse.quote(url, safe=":/?#@!$&'*+,;=%~")


# --- GitLab CI -----------------------------------------------------------------------


@contextlib.contextmanager
def gitlab_section(name, header, collapsed=False):
    """A collapsible section of GitLab's job log around what is printed inside."""
    option = "[collapsed=true]" if collapsed else ""
    print(f"\x1b[0Ksection_start:{int(time.time())}:{name}{option}\r\x1b[0K{header}")
    yield
    print(f"\x1b[0Ksection_end:{int(time.time())}:{name}\r\x1b[0K")


CODEQUALITY_SEVERITY = {"FAIL": "critical", "REJECT": "critical", "HOLD": "major",
                        "WARN": "minor"}


def write_codequality(path, rows, only_failures=False):
    """A GitLab Code Quality report of the failing and WARN rows."""
    issues = []
    for row in group(rows, FAILING) + ([] if only_failures else group(rows, WARNING)):
        key = f"{row.node}\n{row.reason}".encode()
        issues.append({
            "description": row.line,
            "check_name": f"flakeboard/{row.reason}",
            "fingerprint": hashlib.sha256(key).hexdigest(),
            "severity": CODEQUALITY_SEVERITY[row.status],
            "location": {"path": node_file(row.node), "lines": {"begin": 1}},
        })
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(issues, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


# --- ledger.py: the ledger command and its cache --------------------------------------


class NotALedger(ValueError):
    """A JSON document that is not a ledger as the board serves it."""


def cmd_ledger(board, args):
    ledger, slug = fetch_ledger(board, args.suite, full=args.full, cache_dir=args.cache,
                                offline_max_age=args.offline_max_age)
    output = args.output or ("flake_ledger_full.json" if args.full else "flake_ledger.json")
    write_atomically(output, json.dumps(ledger, indent=2, ensure_ascii=False) + "\n")
    entries = ledger_entries(ledger, args.full)
    today = time.strftime("%Y-%m-%d", time.gmtime())
    expired = sorted(node for node, e in entries.items() if e["expires"] < today)
    for node in expired:
        entry = entries[node]
        print(f"EXPIRED {node}: quarantine expired on {entry['expires']} "
              f"(owner {entry['owner']}); the budget gate fails it")
    print(f"Wrote {output}: {len(entries)} quarantine entr"
          f"{'y' if len(entries) == 1 else 'ies'} of suite {slug}, {len(expired)} expired.")
    return 0


def fetch_ledger(board, suite, *, full, cache_dir=None, offline_max_age=None, notes=None):
    """The suite's ledger as the board serves it (the full view when ``full``), and the
    suite's slug. With ``cache_dir`` the last good ledger is kept there, revalidated, and
    served when the board cannot be reached if it is younger than ``offline_max_age``
    seconds; otherwise, and with no cache, Unreachable: the gate fails closed."""
    cache = LedgerCache(cache_dir, board.url, suite, full) if cache_dir else None
    cached = cache.load() if cache else None
    try:
        slug = suite_slug(board, suite)
        query = {"view": "full"} if full else None
        headers = {"If-None-Match": cached["etag"]} if cached and cached["etag"] else None
        status, raw, answer_headers = board.fetch(
            "GET", f"/api/v1/suites/{quote(slug)}/ledger", query=query, headers=headers)
        if status == 304 and cached:
            print("The cached ledger is current (304 Not Modified).", file=notes or sys.stdout)
            raw = cached["body"].encode("utf-8")
        ledger = decoded(raw)
        try:
            ledger_entries(ledger, full)
        except ValueError:
            raise Unreachable("the board's answer is not a ledger") from None
        if cache:
            cache.save(raw, answer_headers.get("ETag") or "", slug)
    except Unreachable as exc:
        if cache is None:
            raise
        ledger, slug = cache.offline(cached, exc, offline_max_age)
    return ledger, slug


def read_ledger_file(path):
    """A ledger file as ``ledger`` writes it, and whether it is the full view; NotALedger
    when it is not one, OSError or ValueError when it cannot be read."""
    with open(path, encoding="utf-8") as handle:
        ledger = json.load(handle)
    full = isinstance(ledger, dict) and isinstance(ledger.get("entries"), list)
    ledger_entries(ledger, full)
    return ledger, full


def ledger_entries(ledger, full):
    """The ledger's entries by node; ValueError when it is not a ledger."""
    try:
        entries = {e["node"]: e for e in ledger["entries"]} if full else ledger
        if all(isinstance(e["expires"], str) and "owner" in e for e in entries.values()):
            return entries
    except (KeyError, TypeError, AttributeError):
        pass
    raise NotALedger("not a ledger")


def write_atomically(path, text):
    """Write ``text`` to ``path`` through a temporary file: a reader sees the old file or
    the new one, never half of one."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, partial = tempfile.mkstemp(dir=folder, prefix=".flakeboard-", suffix=".partial")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(partial)
        raise


# --- the ledger's cache, for when the board cannot be reached ------------------------

DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def duration(text):
    """Seconds of a duration such as 6h, 90m, 2d or 3600s."""
    match = re.fullmatch(r"(\d+)([smhd])", text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 6h, 90m, 2d")
    return int(match.group(1)) * DURATION_UNITS[match.group(2)]


def spoken(seconds):
    """A duration in words: 2h05m, 3m20s, 4d03h."""
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class LedgerCache:
    """The last good ledger of a suite (one file in the cache folder, by suite and view):
    the body as served, its ETag, the board and when it was fetched (UTC)."""

    def __init__(self, folder, url, suite, full):
        name = f"ledger-{quote(suite) or '_token'}{'-full' if full else ''}.json"
        self.path = os.path.join(folder, name)
        self.url, self.full = url, full

    def load(self):
        """The cached ledger as a dict (body, etag, slug, fetched_at), or None when there is
        none; a corrupt one is ignored with a warning."""
        try:
            with open(self.path, encoding="utf-8") as handle:
                cached = json.load(handle)
            fetched = time.strptime(cached["fetched_at"], TIME_FORMAT)
            cached["age"] = max(0, time.time() - calendar.timegm(fetched))
            ledger_entries(json.loads(cached["body"]), self.full)
            if not all(isinstance(cached[key], str) for key in ("etag", "slug", "url")):
                raise ValueError("etag, slug or url is not a string")
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"flakeboard: warning: ignoring the corrupt ledger cache {self.path} "
                  f"({type(exc).__name__}: {exc})", file=sys.stderr)
            return None
        return cached

    def save(self, raw, etag, slug):
        record = {"url": self.url, "slug": slug, "etag": etag, "body": raw.decode("utf-8"),
                  "fetched_at": time.strftime(TIME_FORMAT, time.gmtime())}
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            write_atomically(self.path, json.dumps(record, ensure_ascii=False) + "\n")
        except OSError as exc:
            print(f"flakeboard: warning: cannot write the ledger cache {self.path}: "
                  f"{exc.strerror}", file=sys.stderr)

    def offline(self, cached, exc, max_age):
        """The cached ledger and its suite, with a loud warning, when the board cannot be
        reached (``exc``) and the cache is younger than ``max_age`` seconds; Unreachable
        saying why not otherwise."""
        if cached is None:
            raise Unreachable(f"{exc}; no cached ledger to fall back on ({self.path})")
        age, limit = spoken(cached["age"]), spoken(max_age)
        if cached["age"] >= max_age:
            raise Unreachable(f"{exc}; the cached ledger is {age} old, over the offline limit "
                              f"of {limit} (--offline-max-age): failing closed")
        print(f"flakeboard: WARNING: cannot reach the board at {self.url}: {exc}\n"
              f"flakeboard: WARNING: using the CACHED ledger fetched from {cached['url']} "
              f"at {cached['fetched_at']} ({age} old, limit {limit}), from {self.path}",
              file=sys.stderr)
        return json.loads(cached["body"]), cached["slug"]


# --- report.py: the report and signals commands ---------------------------------------


def cmd_report(board, args):
    answer = _upload(board, args, "reports", commit=args.commit, branch=args.branch)
    return present(answer, "report", args)


def cmd_signals(board, args):
    answer = _upload(board, args, "verdicts", patch=args.patch, commit=args.commit)
    return present(answer, "signals", args)


# --- junit.py: passive evidence from the JUnit XML a CI job already writes ------------


def cmd_junit(board, args):
    """Upload each JUnit file, gzip-compressed, and print what the board found in it. It is
    evidence, not a gate: exit 0 once every file is stored, 3 or 4 when one could not be."""
    files = [(path, read_upload(path)) for path in args.files]  # all readable first
    slug = suite_slug(board, args.suite)
    query = {"commit": args.commit, "branch": args.branch, "job": args.job,
             "attempt": str(args.attempt)}
    headers = {"Content-Type": "application/xml", "Content-Encoding": "gzip"}
    answers = []
    for path, raw in files:
        try:
            answer, _ = board.call("POST", f"/api/v1/suites/{quote(slug)}/junit", query=query,
                                   body=gzip.compress(raw, mtime=0), headers=headers)
        except Refused:
            print(f"flakeboard: {path} was not stored"
                  + (f" ({len(answers)} file(s) before it were)" if answers else ""),
                  file=sys.stderr)
            raise
        answers.append((path, answer))
    fmt = output_format(args, os.environ)
    if fmt == "json":
        print(json.dumps([answer for _, answer in answers]))
        return 0
    flaky = sorted({node for _, answer in answers for node in answer["newly_flaky"]})
    if fmt == "markdown":
        sys.stdout.write(junit_markdown(answers, flaky, args.commit))
        return 0
    for path, answer in answers:
        again = " (uploaded before: the stored result)" if answer["duplicate"] else ""
        print(f"{path}: {answer['summary']}{again}")
    for node in flaky:
        print(f"FLAKY {node}")
    if fmt == "github":
        _print_lines(junit_annotations(flaky, args.commit))
        path = os.environ.get("GITHUB_STEP_SUMMARY")
        if path:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(junit_markdown(answers, flaky, args.commit))
    print(f"{len(answers)} file{'s' if len(answers) != 1 else ''} stored; "
          f"{len(flaky)} test{'s' if len(flaky) != 1 else ''} newly flaky on {args.commit}.")
    return 0


def junit_annotations(flaky, commit):
    """A ::warning per newly flaky test, as many as GitHub shows, then a ::notice of the
    rest."""
    for node in flaky[:ANNOTATIONS_SHOWN]:
        yield (f"::warning file={github_property(node_file(node))},"
               f"title={github_property(f'Flaky test {node}')}::"
               + github_data(f"{node} passed and failed in one job on {commit}"))
    if len(flaky) > ANNOTATIONS_SHOWN:
        yield "::notice::" + github_data(
            f"{len(flaky) - ANNOTATIONS_SHOWN} more newly flaky tests are not annotated "
            f"(GitHub shows {ANNOTATIONS_SHOWN}): they are in the job summary")


def junit_markdown(answers, flaky, commit):
    lines = [f"### Flakeboard: {len(flaky)} test{'s' if len(flaky) != 1 else ''} newly "
             f"flaky on `{markdown_text(commit)}`", ""]
    lines += [f"- {markdown_text(path)}: {markdown_text(answer['summary'])}"
              for path, answer in answers]
    if flaky:
        lines += ["", "| newly flaky test |", "|---|"]
        lines += [f"| {markdown_text(node)} |" for node in flaky]
    return "\n".join(lines) + "\n"


# --- measure_runs.py: a target's runs: Wilson bounds, early stop, classification ------


SCRIPT_SEED_BASE = 9137
SCRIPT_RUNS = 200  # FLAKE_RUNS' default and the script's min_runs
SCRIPT_MAX_UPPER_RATE = 0.02
Z95 = 1.96
EARLY_STOP_MIN_FAILS = 3
CLASSIFICATIONS = ("stable", "flaky", "broken", "order_dependent", "repeat_unsafe")


def _wilson(fails, n, z, side):
    p = fails / n
    z2 = z * z
    centre = p + z2 / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return min(1.0, max(0.0, (centre + side * margin) / (1 + z2 / n)))


def upper95(fails, n, z=Z95):
    """The Wilson score interval's upper limit, as the board computes it (SPEC 2.1)."""
    return 1.0 if n <= 0 or fails >= n else _wilson(fails, n, z, +1)


def lower95(fails, n, z=Z95):
    """The Wilson score interval's lower limit: the rate the runs show with 95% confidence."""
    return 0.0 if n <= 0 or fails <= 0 else _wilson(fails, n, z, -1)


def stops_early(fails, done, runs, max_upper_rate):
    """Whether a target may stop after ``done`` of its ``runs`` runs with ``fails`` failures:
    no outcome of the rest could bring it within budget, and the runs done are evidence of a
    rate over budget (95% confidence), not one unlucky run."""
    return (fails >= EARLY_STOP_MIN_FAILS
            and upper95(fails, runs) > max_upper_rate
            and lower95(fails, done) > max_upper_rate)


def _rootdir_id(name, rootdir, cwd):
    """A node id given from ``cwd`` as pytest names it from its rootdir."""
    path, sep, rest = name.partition("::")
    relative = os.path.relpath(os.path.join(cwd, path), rootdir).replace(os.sep, "/")
    return relative + sep + rest


def resolve_targets(names, hello, cwd):
    """Each target's collected node id, from a worker's hello (its items and collection
    errors); UsageError naming every target that collects nothing or more than one test."""
    items, problems, resolved = hello["items"], [], {}
    errors = dict(hello["errors"])
    for name in names:
        wanted = _rootdir_id(name, hello["rootdir"], cwd)
        if wanted in items:
            resolved[name] = wanted
            continue
        found = [item for item in items if item.startswith((wanted + "::", wanted + "["))]
        if len(found) == 1:
            resolved[name] = found[0]
        elif found:
            shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
            problems.append(f"{name} is ambiguous: it collects {len(found)} tests ({shown}); "
                            f"name one of them")
        else:
            error = errors.get(node_file(wanted))
            problems.append(f"{name} collects nothing"
                            + (f" (collecting {node_file(name)} failed: {error})" if error else ""))
    if problems:
        raise UsageError("\n".join(problems))
    return resolved


def predecessors(node, items):
    """The items that come before ``node`` in its module, in the order pytest runs them."""
    before = items[:items.index(node)]
    return [item for item in before if node_file(item) == node_file(node)]


Task = collections.namedtuple("Task", "tag node seed target index")
Outcome = collections.namedtuple("Outcome", "failed seconds detail first")


class Target:
    """A node id of the targets file and what its runs found. Run i sees PATCH_SEED =
    seed_base + i; the report counts the runs 0..n-1 that completed in a row, so the counts
    do not depend on which worker finished first."""

    def __init__(self, name, runs, seed_base):
        self.name, self.runs, self.seed_base = name, runs, seed_base
        self.node, self.predecessors = None, []
        self.classification, self.why, self.reported = None, "", False
        self.isolation = {}  # "alone", "after": the Outcome of each isolation check
        self.reset()

    def reset(self):
        self.outcomes = {}  # run index -> Outcome
        self.returned = []  # indices handed back by a worker that was stopped (a heap)
        self.next_index = self.done = self.fails = 0
        self.stopped = False
        self.started = None

    @property
    def finished(self):
        return self.stopped or self.done == self.runs

    def waiting(self):
        return 0 if self.finished else self.runs - self.next_index + len(self.returned)

    def take(self, count):
        indices = []
        while len(indices) < count and self.waiting():
            if self.returned:
                indices.append(heapq.heappop(self.returned))
            else:
                indices.append(self.next_index)
                self.next_index += 1
        if indices and self.started is None:
            self.started = time.monotonic()
        return indices

    def give_back(self, index):
        if not self.finished and index not in self.outcomes:
            heapq.heappush(self.returned, index)

    def record(self, index, outcome, early, max_upper_rate):
        """Count one run; True when it finished the target."""
        if self.finished or index in self.outcomes:
            return False
        self.outcomes[index] = outcome
        while self.done in self.outcomes and not self.stopped:
            self.fails += self.outcomes[self.done].failed
            self.done += 1
            self.stopped = early and self.done < self.runs and stops_early(
                self.fails, self.done, self.runs, max_upper_rate)
        return self.finished

    def counted(self):
        return [self.outcomes[i] for i in range(self.done)]

    def suspect(self):
        """Whether repeating it in process may be what fails it: every run failed, or each
        worker's first run of it passed and every later one failed."""
        runs = self.counted()
        if not runs or not any(run.failed for run in runs):
            return False
        later = [run for run in runs if not run.first]
        return all(run.failed for run in runs) or (
            bool(later) and all(run.failed for run in later)
            and not any(run.failed for run in runs if run.first))

    def row(self):
        """The report's row, in the script's shape and key order."""
        return {"nodeid": self.name, "n": self.done, "fails": self.fails,
                "upper95": round(upper95(self.fails, self.done), 4),
                "seed_base": self.seed_base}

    def seconds(self):
        return sum(outcome.seconds for outcome in self.outcomes.values())


class Schedule:
    """Hands out the targets' runs in index order and counts their outcomes."""

    def __init__(self, targets, *, early, max_upper_rate, slots, progress):
        self.targets, self.early, self.max_upper_rate = targets, early, max_upper_rate
        self.slots, self.progress = slots, progress
        self.tags = itertools.count()

    def waiting(self):
        return sum(target.waiting() for target in self.targets)

    def take(self, count, prefer=None):
        """Up to ``count`` runs of one target: ``prefer`` (the worker's last, whose module
        it has set up) while it has runs waiting, else the one with the most waiting."""
        if prefer is None or not prefer.waiting():
            prefer = max(self.targets, key=Target.waiting)
        share = max(1, prefer.waiting() // self.slots)
        return [Task(next(self.tags), prefer.node, prefer.seed_base + index, prefer, index)
                for index in prefer.take(min(count, share))]

    def record(self, task, outcome):
        """Count a run; True when it finished its target."""
        target = task.target
        finished = target.record(task.index, outcome, self.early, self.max_upper_rate)
        self.progress.update(target)
        if finished and target.classification is None:
            classify_by_outcomes(target)
        if finished and target.classification and not target.reported:
            self.progress.finished(target)
        return finished


def classify_by_outcomes(target):
    """stable or flaky; a suspect target waits for its isolation check."""
    if not target.suspect():
        target.classification = "flaky" if target.fails else "stable"


# The isolation check of a target whose in-process runs all failed: (fails alone, fails
# after the tests before it in its module) -> its classification, and why.
ISOLATION = {
    (True, True): ("broken", "fails alone and after the tests before it in its module"),
    (True, False): ("order_dependent", "fails alone but passes after the tests before it in "
                                       "its module: it needs state one of them sets"),
    (False, True): ("order_dependent", "passes alone but fails after the tests before it in "
                                       "its module: one of them leaves state that breaks it"),
    (False, False): ("repeat_unsafe", "passes alone and after its module, fails when "
                                      "repeated in one process: measured again with a fresh "
                                      "process per run"),
}


def adopt_collection(targets, hello, cwd):
    """Give each target its collected node and the nodes before it in its module."""
    nodes = resolve_targets([target.name for target in targets], hello, cwd)
    for target in targets:
        target.node = nodes[target.name]
        target.predecessors = predecessors(target.node, hello["items"])


def classify_isolated(target):
    """The isolation table's classification of a suspect target, from its checks."""
    runs = target.counted()
    # Without an "alone" check, its runs were each alone already (--fresh): all failed.
    alone = target.isolation.get("alone") or next(run for run in runs if run.failed)
    after = target.isolation.get("after", alone)
    classification, why = ISOLATION[alone.failed, after.failed]
    if not all(run.failed for run in runs) and classification != "repeat_unsafe":
        # Only its first run in each process passed, and isolation does not explain that.
        classification, why = "flaky", ""
    failure = next((o.detail for o in (alone, after, *runs) if o.failed and o.detail), "")
    if classification in ("broken", "order_dependent") and failure:
        why += f" ({failure})"
    target.classification, target.why = classification, why
    return classification


# --- measure_pool.py: measure's pool of pytest worker processes -----------------------


CHUNK = 16  # runs sent to a worker at a time: small enough to stop early, big enough to stream
WORKER_KEY_ENV = "FLAKEBOARD_WORKER_KEY"
NO_PYTEST = re.compile(r"No module named '?pytest'?$", re.M)


def plugin_pytest(python, arguments, environ):
    """The command and environment of a pytest of ``python`` that loads this file as its
    plugin (-p flakeboard_ci, found through PYTHONPATH), with the given arguments."""
    plugin_dir, plugin_file = os.path.split(os.path.abspath(__file__))
    pythonpath = [p for p in (environ.get("PYTHONPATH"), plugin_dir) if p]
    env = dict(environ, PYTHONPATH=os.pathsep.join(pythonpath))
    return [python, "-m", "pytest", "-p", os.path.splitext(plugin_file)[0], *arguments], env


class MeasureError(UsageError):
    """Measuring cannot go on: the workers cannot start (exit 64)."""


class Worker:
    """One pytest process of the pool, as the parent sees it."""

    def __init__(self, ident, proc, log, fixed):
        self.ident, self.proc, self.log = ident, proc, log
        self.fixed = fixed  # its whole list of tasks, or None: fed as it goes
        self.conn = self.hello = None
        self.outstanding = collections.OrderedDict()  # tag -> Task, in the order it runs them
        self.since = time.monotonic()  # when its first outstanding task started, about
        self.ended = False
        self.last = None  # the target it ran last
        self.ran = set()  # the nodes it has run: a node's first run in a process is marked

    def send(self, message):
        self.conn.send_bytes(json.dumps(message).encode("utf-8"))

    def log_tail(self, lines=15):
        try:
            with open(self.log, encoding="utf-8", errors="replace") as handle:
                return "".join(handle.readlines()[-lines:]).rstrip()
        except OSError:
            return ""


class Pool:
    """Worker processes, each a pytest that loads this file as a plugin, collects its files
    once and runs what it is sent; a process is stopped when a run outlasts the timeout."""

    def __init__(self, *, python, folder, slots, timeout, progress):
        self.python, self.folder, self.slots = python, folder, slots
        self.timeout, self.progress = timeout, progress
        self.key = os.urandom(16)
        # A Unix socket (a named pipe on Windows): a TCP one would hold small answers back.
        self.listener = multiprocessing.connection.Listener(authkey=self.key)
        self.accepted = queue.Queue()
        threading.Thread(target=self._accept, daemon=True).start()
        self.workers, self.spawned = {}, itertools.count()

    def _accept(self):
        while True:
            try:
                conn = self.listener.accept()
            except (OSError, EOFError, multiprocessing.AuthenticationError):
                if self.listener is None:
                    return
                continue
            self.accepted.put(conn)

    def close(self):
        for worker in list(self.workers.values()):
            self._stop(worker)
        listener, self.listener = self.listener, None
        listener.close()

    def spawn(self, files, fixed=None, seed=SCRIPT_SEED_BASE):
        ident = next(self.spawned)
        command, env = plugin_pytest(self.python, [
            f"--flakeboard-worker={ident}:{self.listener.address}",
            f"--basetemp={os.path.join(self.folder, f'tmp{ident}')}",
            "-q", "--tb=no", "-p", "no:cacheprovider", *files],
            dict(os.environ, PYTHONHASHSEED="0", PATCH_SEED=str(seed)))
        env[WORKER_KEY_ENV] = self.key.hex()
        log = os.path.join(self.folder, f"worker{ident}.log")
        with open(log, "wb") as out:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env=env)
        self.workers[ident] = Worker(ident, proc, log, fixed)

    def run(self, source):
        """Run what ``source`` starts and feeds until no process is left."""
        while True:
            while source.spawn(self, len(self.workers)):
                pass
            if not self.workers:
                return
            self._receive(source)
            for worker in list(self.workers.values()):
                self._check(worker, source)
            for worker in list(self.workers.values()):
                if worker.hello and not worker.ended:
                    self._feed(worker, source)
            self.progress.tick()

    def _receive(self, source):
        while not self.accepted.empty():
            conn = self.accepted.get()
            # The hello comes first; a worker is known by the ident it was started with.
            hello = json.loads(conn.recv_bytes())
            worker = self.workers.get(hello["hello"])
            if worker is None:
                conn.close()
                continue
            worker.conn, worker.hello, worker.since = conn, hello, time.monotonic()
            source.hello(worker, hello)
        conns = {w.conn: w for w in self.workers.values() if w.conn is not None}
        for conn in multiprocessing.connection.wait(list(conns), timeout=0.05):
            self._read(conns[conn], source)

    def _read(self, worker, source):
        try:
            while worker.conn.poll():
                self._message(worker, json.loads(worker.conn.recv_bytes()), source)
        except (EOFError, OSError):
            worker.conn.close()
            worker.conn = None

    def _message(self, worker, message, source):
        if "dropped" in message:
            for tag in message["dropped"]:
                worker.outstanding.pop(tag, None)
            return
        task = worker.outstanding.pop(message["tag"])
        worker.since = time.monotonic()
        first = task.node not in worker.ran
        worker.ran.add(task.node)
        worker.last = task.target
        outcome = Outcome(message["failed"], message["seconds"], message["detail"], first)
        if source.result(task, outcome):
            self._drop(task.node)

    def _drop(self, node):
        """Tell the fed workers to skip their queued runs of a finished node."""
        for worker in self.workers.values():
            queued = any(task.node == node for task in worker.outstanding.values())
            if queued and worker.fixed is None and worker.conn is not None:
                worker.send({"drop": node})

    def _check(self, worker, source):
        """Handle a worker that exited or outlasted the timeout."""
        code = worker.proc.poll()
        # The clock runs from the hello: collecting is not part of a run.
        late = (bool(worker.outstanding) and self.timeout is not None
                and time.monotonic() - worker.since > self.timeout)
        if code is None and not late:
            return
        if code is None:
            self._stop(worker)
        elif worker.conn is not None:
            self._read(worker, source)  # what it said before it exited
        if worker.hello is None and not worker.fixed:
            # Nothing of its own to fail: pytest itself could not start here.
            raise MeasureError(self._startup_failure(worker, code))
        if worker.hello is None:
            worker.outstanding.update((task.tag, task) for task in worker.fixed)
        self._lose(worker, source, code, late)
        self.workers.pop(worker.ident, None)
        if worker.conn is not None:
            worker.conn.close()

    def _lose(self, worker, source, code, late):
        """The worker is gone: its running task failed (timed out, or crashed the process);
        the rest are handed back, or failed when the process was their only one."""
        tasks = list(worker.outstanding.values())
        worker.outstanding.clear()
        for position, task in enumerate(tasks):
            if position == 0 or worker.fixed is not None:
                if late and position == 0:
                    detail = f"timed out after {self.timeout:g}s and was stopped"
                    self.progress.timed_out(task, self.timeout)
                else:
                    detail = f"its pytest process ended (exit code {code}) before it finished"
                first = task.node not in worker.ran
                worker.ran.add(task.node)
                if source.result(task, Outcome(True, 0.0, detail, first)):
                    self._drop(task.node)
            else:
                source.lost(task)

    def _startup_failure(self, worker, code):
        tail = worker.log_tail()
        if NO_PYTEST.search(tail):
            return (f"there is no pytest in {self.python}: measure runs the tests with the "
                    f"interpreter that runs it; install pytest there, or run flakeboard_ci.py "
                    f"with the project's own Python")
        return f"the pytest worker could not start (exit code {code}):\n{tail}"

    def _stop(self, worker):
        if worker.proc.poll() is None:
            worker.proc.kill()
        worker.proc.wait()

    def _feed(self, worker, source):
        if worker.fixed is not None:
            self._send(worker, worker.fixed)
            worker.send({"end": True})
            worker.ended = True
            return
        if len(worker.outstanding) < CHUNK:
            tasks = source.feed(worker, CHUNK)
            if tasks:
                self._send(worker, tasks)
            elif len(worker.outstanding) <= 1 and not source.waiting():
                worker.send({"end": True})
                worker.ended = True

    def _send(self, worker, tasks):
        if not worker.outstanding:
            worker.since = time.monotonic()
        for task in tasks:
            worker.outstanding[task.tag] = task
        worker.send({"tasks": [[task.tag, task.node, task.seed] for task in tasks]})


class Source:
    """What a pool runs: which processes to start, what to send them, where results go."""

    def spawn(self, pool, live):
        """Start a process with ``pool.spawn`` if one is due (``live`` are running): True
        when it did."""
        return False

    def hello(self, worker, hello):
        pass

    def feed(self, worker, count):
        return []

    def waiting(self):
        return 0

    def result(self, task, outcome):
        return False

    def lost(self, task):
        pass


class Collection(Source):
    """One process that collects the targets' files and runs nothing: the check that every
    target names one test, before a process per run is started."""

    def __init__(self, targets, files):
        self.targets, self.files, self.started = targets, files, False

    def spawn(self, pool, live):
        if self.started:
            return False
        self.started = True
        pool.spawn(self.files, fixed=[])
        return True

    def hello(self, worker, hello):
        adopt_collection(self.targets, hello, os.getcwd())


class SharedRuns(Source):
    """The runs, fed to long-lived workers that each collected every target's file once."""

    def __init__(self, schedule, files):
        self.schedule, self.files, self.collected = schedule, files, False

    def spawn(self, pool, live):
        if live >= min(pool.slots, self.schedule.waiting()):
            return False
        pool.spawn(self.files)
        return True

    def hello(self, worker, hello):
        if not self.collected:
            adopt_collection(self.schedule.targets, hello, os.getcwd())
            self.collected = True

    def feed(self, worker, count):
        return self.schedule.take(count, prefer=worker.last) if self.collected else []

    def waiting(self):
        return self.schedule.waiting()

    def result(self, task, outcome):
        return self.schedule.record(task, outcome)

    def lost(self, task):
        task.target.give_back(task.index)


class FreshRuns(SharedRuns):
    """A new process per run, started with its seed as the script starts it."""

    def __init__(self, schedule):
        super().__init__(schedule, [])
        self.collected = True

    def spawn(self, pool, live):
        if live >= pool.slots or not self.schedule.waiting():
            return False
        task = self.schedule.take(1)[0]
        pool.spawn([node_file(task.target.name)], fixed=[task], seed=task.seed)
        return True


class IsolationChecks(Source):
    """For each target: a fresh process that runs it alone (unless its runs already were
    alone), and one that runs the tests before it in its module first."""

    def __init__(self, targets, alone, tags):
        self.pending = []
        for target in targets:
            target.isolation = {}
            seed = target.seed_base
            if alone:
                self.pending.append((target, [Task(next(tags), target.node, seed, target,
                                                   "alone")]))
            if target.predecessors:
                before = [Task(next(tags), node, seed, None, None)
                          for node in target.predecessors]
                self.pending.append((target, [*before, Task(next(tags), target.node, seed,
                                                            target, "after")]))

    def spawn(self, pool, live):
        if live >= pool.slots or not self.pending:
            return False
        target, tasks = self.pending.pop(0)
        pool.spawn([node_file(target.name)], fixed=tasks, seed=target.seed_base)
        return True

    def result(self, task, outcome):
        if task.target is not None:
            task.target.isolation[task.index] = outcome
        return False


# --- measure.py: the measure command: the flake budget's evidence, fast ---------------


def read_targets(path):
    """The node ids of the targets file, one a line, blank lines left out; UsageError when
    it is missing, empty or names a test twice."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the targets file {path}: "
                         f"{getattr(exc, 'strerror', None) or exc}") from None
    names = [line.strip() for line in lines if line.strip()]
    if not names:
        raise UsageError(f"the targets file {path} names no tests: write one node id a line")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise UsageError(f"the targets file {path} names {', '.join(twice)} more than once")
    return names


def measure_settings(args, environ):
    """runs and today from the command line, else FLAKE_RUNS and TODAY, as the script
    reads them; UsageError when one is not usable."""
    runs = args.runs
    if runs is None:
        text = environ.get("FLAKE_RUNS", str(SCRIPT_RUNS))
        try:
            runs = int(text)
        except ValueError:
            raise UsageError(f"FLAKE_RUNS must be a whole number (got {text!r})") from None
    if runs < 1:
        raise UsageError(f"the number of runs must be at least 1 (got {runs})")
    today = environ.get("TODAY") or time.strftime("%Y-%m-%d", time.gmtime())
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", today):
        raise UsageError(f"TODAY must be a date such as 2026-10-15 (got {today!r})")
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if args.run_timeout is not None and args.run_timeout <= 0:
        raise UsageError("--timeout must be above 0 seconds")
    return runs, today


def load_gate_ledger(path):
    """The ledger's entries by node and its policy (a full view has one, else None);
    no entries when the file is absent, UsageError when it is not a ledger."""
    try:
        ledger, full = read_ledger_file(path)
    except FileNotFoundError:
        return {}, None
    except NotALedger:
        raise UsageError(f"{path} is not a ledger (flakeboard_ci.py ledger writes one)") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the ledger {path}: {exc}") from None
    policy = ledger.get("policy") if full else None
    return ledger_entries(ledger, full), policy if isinstance(policy, dict) else None


def gate_lines(rows, entries, today, max_upper_rate, min_runs):
    """The script's gate of the report against the ledger: its OK/WARN/FAIL lines and its
    exit code (1 on any FAIL)."""
    lines, code = [], 0
    for row in rows:
        node, entry = row["nodeid"], entries.get(row["nodeid"])
        if entry is not None and entry["expires"] < today:
            lines.append(f"FAIL {node}: quarantine expired on {entry['expires']}")
            code = 1
        elif row["upper95"] <= max_upper_rate and row["n"] >= min_runs:
            lines.append(f"OK   {node}: upper95={row['upper95']} over {row['n']} runs")
        elif entry is None:
            lines.append(f"FAIL {node}: upper95={row['upper95']} > {max_upper_rate}, "
                         f"no quarantine entry")
            code = 1
        else:
            lines.append(f"WARN {node}: quarantined until {entry['expires']} "
                         f"(owner {entry['owner']})")
    return lines, code


class Progress:
    """Where the runs are, on stderr: on a terminal a live line per target in flight (runs
    done of n, failures, rate, ETA); otherwise a line per finished target. Then a summary
    that names the slowest targets."""

    LIVE_LINES = 20

    def __init__(self, stream):
        self.stream, self.live = stream, stream.isatty()
        self.active = collections.OrderedDict()
        self.drawn, self.drawn_at, self.runs = 0, 0.0, 0
        self.began = time.monotonic()

    def update(self, target):
        self.runs += 1
        if not target.reported:
            self.active[target.name] = target

    def finished(self, target):
        target.reported = True
        self.active.pop(target.name, None)
        self.note(result_line(target))

    def timed_out(self, task, timeout):
        name = task.target.name if task.target is not None else task.node
        self.note(f"TIMEOUT {name}: its run with PATCH_SEED={task.seed} was stopped after "
                  f"{timeout:g}s and counts as a failure")

    def note(self, line):
        self._erase()
        print(line, file=self.stream, flush=True)
        self._draw()

    def tick(self):
        if self.live and time.monotonic() - self.drawn_at > 0.2:
            self._erase()
            self._draw()

    def close(self):
        self._erase()

    def _erase(self):
        if self.drawn:
            self.stream.write(f"\x1b[{self.drawn}F\x1b[J")
            self.drawn = 0

    def _draw(self):
        if not self.live:
            return
        width = shutil.get_terminal_size().columns - 1
        now = time.monotonic()
        lines = [live_line(target, now)[:width] for target in self.active.values()]
        lines = lines[:self.LIVE_LINES]
        for line in lines:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.drawn, self.drawn_at = len(lines), now

    def summary(self, targets, slots):
        wall = time.monotonic() - self.began
        slowest = sorted((t for t in targets if t.outcomes),
                         key=lambda t: t.seconds() / len(t.outcomes), reverse=True)[:3]
        named = ", ".join(f"{t.name} ({1000 * t.seconds() / len(t.outcomes):.0f} ms a run)"
                          for t in slowest)
        counts = collections.Counter(t.classification for t in targets)
        kinds = ", ".join(f"{counts[kind]} {kind}" for kind in CLASSIFICATIONS if counts[kind])
        self.note(f"Measured {len(targets)} target{'s' * (len(targets) != 1)} ({kinds}): "
                  f"{self.runs} runs in {wall:.1f}s ({self.runs / max(wall, 1e-9):.0f} runs/s, "
                  f"{slots} worker{'s' * (slots != 1)}). Slowest: {named or 'none'}.")


def live_line(target, now):
    done = len(target.outcomes)
    fails = sum(outcome.failed for outcome in target.outcomes.values())
    line = (f"  {target.name}: {done}/{target.runs} runs, {fails} failed "
            f"({fails / max(done, 1):.1%})")
    if target.finished:
        return line + ", now checking it alone and after its module"
    eta = "?"
    if done and target.started is not None:
        eta = spoken((now - target.started) / done * (target.runs - done))
    return f"{line}, ETA {eta}"


def result_line(target):
    line = (f"{target.classification:<15} {target.name}: {target.fails}/{target.done} failed,"
            f" upper95={upper95(target.fails, target.done):.4f}")
    if target.stopped:
        line += (f", stopped early after {target.done} of {target.runs} runs "
                 f"(over budget with 95% confidence)")
    return line + (f"; {target.why}" if target.why else "")


def measure_policy(args, board, ledger_policy):
    """max_upper_rate and min_runs: --max-upper-rate, else the board's policy (with
    --upload), else a full ledger's, else the script's 0.02 and 200."""
    policy = {"max_upper_rate": SCRIPT_MAX_UPPER_RATE, "min_runs": SCRIPT_RUNS}
    for found in (ledger_policy, board_policy(board, args) if board else None):
        for key in policy:
            if isinstance((found or {}).get(key), (int, float)):
                policy[key] = found[key]
    if args.max_upper_rate is not None:
        if not 0 < args.max_upper_rate <= 1:
            raise UsageError(f"--max-upper-rate must be within (0, 1] "
                             f"(got {args.max_upper_rate})")
        policy["max_upper_rate"] = args.max_upper_rate
    return policy["max_upper_rate"], policy["min_runs"]


def board_policy(board, args):
    args.suite = suite_slug(board, args.suite)
    answer, _ = board.call("GET", f"/api/v1/suites/{quote(args.suite)}/ledger",
                           query={"view": "full"})
    return answer.get("policy")


def run_measurement(targets, args, max_upper_rate, progress):
    """Measure the targets (in process, or a process per run with --fresh), check the
    isolation of those whose repeats all failed, and measure the repeat-unsafe ones again
    with a process per run."""
    slots = args.workers or os.cpu_count() or 1
    folder = tempfile.mkdtemp(prefix="flakeboard-measure-")
    pool = Pool(python=sys.executable, folder=folder, slots=slots,
                timeout=args.run_timeout, progress=progress)

    def schedule(chosen):
        return Schedule(chosen, early=not args.exact, max_upper_rate=max_upper_rate,
                        slots=slots, progress=progress)

    try:
        files = list(collections.OrderedDict.fromkeys(node_file(t.name) for t in targets))
        measured = schedule(targets)
        if args.fresh:
            pool.run(Collection(targets, files))
            pool.run(FreshRuns(measured))
        else:
            pool.run(SharedRuns(measured, files))
        suspects = [target for target in targets if target.classification is None]
        pool.run(IsolationChecks(suspects, alone=not args.fresh, tags=measured.tags))
        unsafe = [t for t in suspects if classify_isolated(t) == "repeat_unsafe"]
        for target in unsafe:
            target.reset()
        pool.run(FreshRuns(schedule(unsafe)))
        for target in suspects:
            if not target.reported:
                progress.finished(target)
    finally:
        pool.close()
        shutil.rmtree(folder, ignore_errors=True)
    return slots


def cmd_measure(board, args):
    runs, today = measure_settings(args, os.environ)
    names = read_targets(args.targets)
    absent = [name for name in names if not os.path.exists(node_file(name))]
    if absent:
        raise UsageError("\n".join(f"{name} collects nothing: there is no "
                                   f"{node_file(name)}" for name in absent))
    entries, ledger_policy = load_gate_ledger(args.ledger)
    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.access(folder, os.W_OK):
        raise UsageError(f"cannot write {args.output}: its folder is missing or read-only")
    max_upper_rate, min_runs = measure_policy(args, board, ledger_policy)
    targets = [Target(name, runs, args.seed_base) for name in names]
    progress = Progress(sys.stderr)
    try:
        slots = run_measurement(targets, args, max_upper_rate, progress)
    except KeyboardInterrupt:
        progress.close()
        print("flakeboard: measure was interrupted; nothing was written.", file=sys.stderr)
        return 130
    progress.summary(targets, slots)
    rows = [target.row() for target in targets]
    try:
        # Byte for byte what the script's json.dump(..., indent=2) writes.
        write_atomically(args.output, json.dumps(rows, indent=2))
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc.strerror}") from None
    lines, code = gate_lines(rows, entries, today, max_upper_rate, min_runs)
    if not (args.upload and output_format(args, os.environ) == "json"):
        _print_lines(lines)
    if not args.upload:
        return code
    body = [dict(t.row(), classification=t.classification) for t in targets]
    answer = _upload(board, args, "reports", body=json.dumps(body).encode("utf-8"),
                     commit=args.commit, branch=args.branch)
    return present(answer, "report", args)


# --- measure_worker.py: measure's workers from the inside -----------------------------


def fresh_item(template):
    """A copy of a collected item, to run once more as pytest runs a new item: its own
    request, so function-scoped fixtures are made anew (a new tmp_path each time), its own
    report sections, and for a method a new instance of its class. Its parents are shared,
    and with them the fixtures of wider scope."""
    item = copy.copy(template)
    item._report_sections = []
    item.user_properties = []
    if getattr(template, "instance", None) is not None:
        for cached in ("_obj", "_instance"):
            item.__dict__.pop(cached, None)
    if hasattr(item, "_initrequest"):
        item._initrequest()
    return item


def failure_line(report):
    """The line of a failed report that says what went wrong."""
    text = getattr(report, "longreprtext", "") or str(report.longrepr or "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    return (errors[0] if errors else lines[-1] if lines else "failed")[:300]


class MeasureWorker:
    """The pytest side of a worker: says hello with what it collected, then runs each task
    it is sent (a node and its PATCH_SEED) on a fresh copy of the item, and answers."""

    def __init__(self, address):
        ident, self.address = address.split(":", 1)
        self.ident = int(ident)
        self.key = bytes.fromhex(os.environ.pop(WORKER_KEY_ENV, ""))
        self.errors, self.reports = [], []
        self.queue, self.ended, self.promised = collections.deque(), False, None

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors.append([report.nodeid, failure_line(report)])

    def pytest_runtest_logreport(self, report):
        self.reports.append(report)

    def pytest_runtestloop(self, session):
        config = session.config
        templates = collections.OrderedDict()
        for item in session.items:
            templates.setdefault(item.nodeid, item)
        conn = multiprocessing.connection.Client(self.address, authkey=self.key)
        try:
            self._send(conn, {"hello": self.ident, "items": list(templates),
                              "rootdir": str(getattr(config, "rootpath", None) or config.rootdir),
                              "errors": self.errors})
            while True:
                self._receive(conn, block=not self.queue and not self.ended)
                if not self.queue:
                    if self.ended:
                        break
                    continue
                tag, node, seed = self.queue.popleft()
                # The next item decides what the teardown keeps: wait until it is known.
                while not self.queue and not self.ended:
                    self._receive(conn, block=True)
                self.promised = self.queue[0][0] if self.queue else None
                nextitem = templates.get(self.queue[0][1]) if self.queue else None
                answer = self._run(templates.get(node), seed, nextitem)
                self._send(conn, dict(answer, tag=tag))
        except EOFError:
            pass  # measure has gone: pytest's session end tears down what is set up
        finally:
            conn.close()
        return True

    def _run(self, template, seed, nextitem):
        if template is None:
            return {"failed": True, "seconds": 0.0, "detail": "not collected in this process"}
        item = fresh_item(template)
        os.environ["PATCH_SEED"] = str(seed)
        self.reports = []
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        failed = [report for report in self.reports if report.failed]
        return {"failed": bool(failed), "seconds": sum(r.duration for r in self.reports),
                "detail": failure_line(failed[0]) if failed else ""}

    def _receive(self, conn, block):
        while block or conn.poll():
            block = False
            message = json.loads(conn.recv_bytes())
            if "tasks" in message:
                self.queue.extend(tuple(task) for task in message["tasks"])
            elif "drop" in message:
                # The promised next item stays: the last teardown was made for it.
                dropped = [task[0] for task in self.queue
                           if task[1] == message["drop"] and task[0] != self.promised]
                self.queue = collections.deque(t for t in self.queue if t[0] not in dropped)
                self._send(conn, {"dropped": dropped})
            elif "end" in message:
                self.ended = True

    @staticmethod
    def _send(conn, message):
        conn.send_bytes(json.dumps(message).encode("utf-8"))


# --- pin.py: the fixture manifest and the pin command ---------------------------------


Manifest = collections.namedtuple("Manifest", "digest files crlf root in_git")
HASH_CHUNK = 1 << 20


class FixturesMissing(UsageError):
    """A fixture folder is not there: pin refuses it, gate sends the lock as missing."""


def repository_root(start):
    """The folder that holds ``.git`` (a folder, or a file in a worktree), from ``start``
    upwards, as git finds a checkout's top; ``start`` itself when there is none. Returns the
    root and whether it is a git checkout."""
    folder = os.path.abspath(start)
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return folder, True
        parent = os.path.dirname(folder)
        if parent == folder:
            return os.path.abspath(start), False
        folder = parent


def manifest_path(path, root):
    """A file's path in the manifest: relative to the root, ``/``-separated, in NFC."""
    relative = os.path.relpath(path, root).replace(os.sep, "/")
    if relative == ".." or relative.startswith("../"):
        raise UsageError(f"the fixture file {path} is outside the repository root {root}")
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"the fixture file name {path!r} is not UTF-8: rename it") from None
    return unicodedata.normalize("NFC", relative)


def fixture_files(folders, root):
    """Every regular file under the folders, by manifest path; UsageError on a symlink or
    anything else that is not a regular file or a folder, FixturesMissing on a missing
    folder."""
    files = {}
    for given in folders:
        top = os.path.abspath(given)
        if not os.path.lexists(top):
            raise FixturesMissing(f"the fixture folder {given} does not exist")
        pending = [top]
        while pending:
            path = pending.pop()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise UsageError(f"{path} is a symbolic link: the fixture manifest refuses "
                                 f"links, whose targets differ between checkouts and OSes; "
                                 f"copy the file in instead")
            if stat.S_ISDIR(mode):
                pending.extend(os.path.join(path, name) for name in os.listdir(path))
            elif stat.S_ISREG(mode):
                files[manifest_path(path, root)] = path
            else:
                raise UsageError(f"{path} is not a regular file or a folder: the fixture "
                                 f"manifest holds regular files only")
    return files


def file_sha256(path):
    """The file's sha256 as read, and whether it holds a CRLF line end."""
    digest, crlf, last = hashlib.sha256(), False, b""
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(HASH_CHUNK), b""):
            digest.update(chunk)
            crlf = crlf or b"\r\n" in last[-1:] + chunk
            last = chunk
    return digest.hexdigest(), crlf


def fixture_manifest(folders, start="."):
    """The manifest of the fixture folders: each regular file's line ``<sha256>  <path>\\n``,
    sorted by the path's UTF-8 bytes; the digest is ``sha256:`` and the sha256 of the lines.
    No timestamps or modes, so the same tree gives the same digest on every checkout."""
    root, in_git = repository_root(start)
    files = fixture_files(folders, root)
    lines, crlf = hashlib.sha256(), []
    for name in sorted(files, key=lambda path: path.encode("utf-8")):
        hexdigest, has_crlf = file_sha256(files[name])
        lines.update(f"{hexdigest}  {name}\n".encode())
        if has_crlf:
            crlf.append(name)
    return Manifest("sha256:" + lines.hexdigest(), len(files), crlf, root, in_git)


def cmd_pin(board, args):
    manifest = fixture_manifest(args.fixtures)
    for name in manifest.crlf:
        print(f"flakeboard: warning: {name} holds CRLF line ends: a checkout that rewrites "
              f"line ends (core.autocrlf) gives another digest", file=sys.stderr)
    where = "the git checkout" if manifest.in_git else "the current folder (no git checkout)"
    print(f"fixture_manifest: {manifest.digest}")
    print(f"seed: {args.seed}")
    print(f"{manifest.files} file{'s' * (manifest.files != 1)}, paths relative to {where} "
          f"{manifest.root}. A lead sets these two as the suite's fixture pin (Settings).")
    return 0


# --- arbiter.py: the board's precedence table, for judging here -----------------------


VERDICT_EXIT_CODES = {"accept": 0, "reject": 1, "hold": 2}
LOCK_SEVERITY = {"match": 0, "drifted": 1, "missing": 2}


def effective_fixture_lock(claimed, manifest, seed, pin):
    """The worse of the claimed lock and what the suite's pin (its manifest and seed, or
    None when the suite has no pin) says of the record's manifest and seed."""
    if pin is None:
        return claimed
    if not manifest:
        found = "missing"
    elif manifest != pin["manifest"] or (pin["seed"] is not None and seed != pin["seed"]):
        found = "drifted"
    else:
        found = "match"
    return max(claimed, found, key=LOCK_SEVERITY.__getitem__)


def arbitrate(property_check, fixture_lock, flake_status):
    """One record's verdict and reason: the first row of the table that matches."""
    if fixture_lock == "drifted":
        return "hold", "fixture_drifted"
    if fixture_lock == "missing":
        return "hold", "fixture_missing"
    if flake_status == "frozen":
        return "hold", "frozen_node"
    if property_check == "fail":
        return "reject", "property_fail"
    if property_check == "not_run":
        return "hold", "property_not_run"
    return "accept", "clean"


def aggregate(outcomes):
    """A batch's verdict and reason from its records' (verdict, reason) pairs: none is HOLD
    no_evidence; else any REJECT, then any HOLD, else ACCEPT, with the reason of the first
    record that decided it."""
    verdicts = [verdict for verdict, _ in outcomes]
    if not verdicts:
        return "hold", "no_evidence"
    verdict = next(v for v in ("reject", "hold", "accept") if v in verdicts)
    return verdict, next(reason for v, reason in outcomes if v == verdict)


def local_answer(records, entries):
    """The gate's records judged here, in the shape of the board's answer to a batch, so
    that the outputs print it as they print the board's."""
    rows, outcomes = [], []
    for record in records:
        verdict, reason = arbitrate(record["property_check"], record["fixture_lock"],
                                    record["flake_status"])
        outcomes.append((verdict, reason))
        entry = entries.get(record["node"]) if record["flake_status"] == "frozen" else None
        rows.append({"node": record["node"], "verdict": verdict, "reason": reason,
                     "flags": [], "fixture_lock": record["fixture_lock"],
                     "flake_status": record["flake_status"], "entry": entry, "url": None})
    verdict, reason = aggregate(outcomes)
    return {"id": None, "url": None, "duplicate": False, "dry_run": False, "local": True,
            "verdict": verdict, "reason": reason, "exit_code": VERDICT_EXIT_CODES[verdict],
            "reason_counts": dict(collections.Counter(r for _, r in outcomes)),
            "records": rows}


# --- gate_recorder.py: gate's pytest run from the inside: each selected node's outcome ---


# The line of a traceback that names the exception: "SyntaxError: invalid syntax".
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b")


def collection_error_line(report):
    """The first line of the error that stopped a file from collecting."""
    text = getattr(report, "longreprtext", "") or str(report.longrepr or "")
    errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    named = [line for line in errors if EXCEPTION_LINE.match(line)]
    return named[-1][:300] if named else failure_line(report)


class GateRecorder:
    """Which nodes the run selected and what became of each, as pytest counts them: a
    failure or an error in setup or teardown fails a node, an xfail that fails passes and
    a strict xpass fails (pytest reports them so), a skip is not run, and so is a node the
    session stopped before (-x, --maxfail, an interrupt). The frozen nodes it is given are
    left out of the run when selected."""

    def __init__(self, path, frozen):
        self.path, self.frozen = path, set(frozen)
        self.selected, self.left_out, self.errors = [], [], []
        self.outcomes, self.failed = {}, set()

    def pytest_collectreport(self, report):
        if report.failed:
            path = report.nodeid or str(getattr(report, "fspath", "") or "conftest.py")
            self.errors.append([path, collection_error_line(report)])

    def pytest_collection_finish(self, session):
        # After every pytest_collection_modifyitems: -k, -m and --deselect have chosen.
        kept = [item for item in session.items if item.nodeid not in self.frozen]
        self.left_out = [item for item in session.items if item.nodeid in self.frozen]
        if self.left_out:
            session.items[:] = kept
            session.config.hook.pytest_deselected(items=self.left_out)
        self.selected = list(collections.OrderedDict.fromkeys(i.nodeid for i in kept))

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed.add(report.nodeid)
        elif report.skipped:
            xfailed = hasattr(report, "wasxfail")
            self.outcomes.setdefault(report.nodeid, "pass" if xfailed else "not_run")
        elif report.when == "call":
            self.outcomes[report.nodeid] = "pass"

    def outcome(self, node):
        return "fail" if node in self.failed else self.outcomes.get(node, "not_run")

    def pytest_sessionfinish(self, session, exitstatus):
        record = {"outcomes": [[node, self.outcome(node)] for node in self.selected],
                  "collection_errors": self.errors,
                  "deselected_frozen": [item.nodeid for item in self.left_out],
                  "exitstatus": int(exitstatus)}
        with open(self.path, "w", encoding="utf-8") as handle:
            json.dump(record, handle)


# --- patch_class.py: gate --diff: the patch's class, from its added lines -------------


# The files whose added lines count: source code. Test files count too: a sleep, a timeout
# or a thread added to a test is the commonest way a test becomes flaky, and a test is
# exactly what the repeat budget measures.
SOURCE_SUFFIXES = (
    ".py", ".pyi", ".pyx", ".pxd",  # Python, Cython
    ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".rs", ".go",  # extensions and services
    ".java", ".kt", ".js", ".mjs", ".ts", ".rb",
)

# What touches concurrency or time: each a name and a regular expression, matched without
# regard to case against an added line. A line counts once, however many match; each
# pattern it matches is counted in the breakdown. The lock pattern wants the word (lock,
# RLock, _lock, locked), so that block and clock are not locks.
RISKY_PATTERNS = (
    ("async", r"\basync\b"),
    ("await", r"\bawait\b"),
    ("asyncio", r"\b(?:asyncio|anyio|trio|gevent|eventlet)\b"),
    ("thread", r"thread"),
    ("lock", r"(?:\b|_)(?:r|dead)?lock(?:s|ed|ing)?(?:\b|_)"),
    ("semaphore", r"semaphore|barrier"),
    ("concurrent", r"concurren"),
    ("multiprocessing", r"multiprocessing|\bfork\b"),
    ("time.", r"\btime\."),
    ("sleep", r"sleep"),
    ("datetime.now", r"\b(?:datetime|date|timezone)\.(?:now|today|utcnow)\b"),
    ("random", r"random"),
    ("retry", r"retr(?:y|ies|ied|ying)"),
    ("timeout", r"time_?out"),
)
_RISKY = [(name, re.compile(pattern, re.IGNORECASE)) for name, pattern in RISKY_PATTERNS]

# The classes by risky lines: low has none, medium 1 to MEDIUM_MAX_LINES, high more.
MEDIUM_MAX_LINES = 5
# gate --measure's runs per tier-2 node: the suite's min_runs times the class's factor.
CLASS_RUNS_FACTOR = {"low": 1, "medium": 2, "high": 4}


class PatchRisk:
    """What a diff's added source lines hold: how many touch concurrency or time, which
    patterns they matched, in which files, and so the patch's class."""

    def __init__(self, lines, patterns, files):
        self.lines = lines
        self.patterns = patterns  # pattern name -> lines it matched
        self.files = files  # path -> risky lines added to it

    @property
    def patch_class(self):
        if self.lines == 0:
            return "low"
        return "medium" if self.lines <= MEDIUM_MAX_LINES else "high"

    def summary(self):
        named = ", ".join(f"{name} {count}" for name, count in self.patterns.most_common())
        where = ", ".join(sorted(self.files))
        line = (f"PATCH CLASS {self.patch_class}: {self.lines} added source "
                f"line{'s' * (self.lines != 1)} touching concurrency or time")
        return line + (f" ({named}) in {where}" if self.lines else "")


def is_source(path):
    return path is not None and path.lower().endswith(SOURCE_SUFFIXES)


def _new_path(header):
    """The path of a '+++ ' line: None for a deleted file."""
    path = header[4:].rstrip("\n")
    if path.startswith('"') and path.endswith('"'):
        path = path[1:-1]  # git quotes a path with unusual characters
    if path == "/dev/null":
        return None
    return path[2:] if path.startswith("b/") else path


def classify_diff(text):
    """The PatchRisk of a unified diff (as `git diff` writes it): only the added lines of
    hunks of source files count, never the file headers."""
    lines, patterns, files = 0, collections.Counter(), collections.Counter()
    path, in_hunk = None, False
    for line in text.splitlines():
        if line.startswith("diff --git "):
            path, in_hunk = None, False
        elif not in_hunk and line.startswith("+++ "):
            path = _new_path(line)
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+") and is_source(path):
            matched = [name for name, pattern in _RISKY if pattern.search(line, 1)]
            if matched:
                lines += 1
                patterns.update(matched)
                files[path] += 1
    return PatchRisk(lines, patterns, files)


def git_diff(revisions):
    """`git diff --unified=0 REVISIONS`' text; UsageError when git cannot give it."""
    command = ["git", "diff", "--unified=0", "--no-color", "--no-ext-diff",
               "--src-prefix=a/", "--dst-prefix=b/", revisions, "--"]
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True,
                              check=False)
    except OSError as exc:
        raise UsageError(f"--diff needs git, which cannot be run: {exc}") from None
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"git diff {revisions} failed (exit code {done.returncode}): "
                         f"{why[0] if why else 'no message'}")
    return done.stdout.decode("utf-8", "replace")


# --- gate_measure.py: gate --measure: tier 2 measured with the class's repeat budget ---


# How many node ids one tiers request asks about: well under the board's upload limit.
TIERS_CHUNK = 5000
REPEAT_BUDGET_TIER = 2
# measure's own defaults for what gate has no option for: one worker per CPU, the early
# stop, in process, no timeout.
MEASURE_DEFAULTS = argparse.Namespace(workers=None, exact=False, fresh=False,
                                      run_timeout=None)


def node_tiers(board, args, nodes):
    """Each node's tier by the suite's tier rules, as the board answers it."""
    args.suite = suite_slug(board, args.suite)
    tiers = {}
    for start in range(0, len(nodes), TIERS_CHUNK):
        chunk = nodes[start:start + TIERS_CHUNK]
        answer, _ = board.call("POST", f"/api/v1/suites/{quote(args.suite)}/tiers",
                               body=json.dumps(chunk).encode("utf-8"))
        tiers.update((row["node"], row["tier"]) for row in answer["tiers"])
    return tiers


def class_budget(ledger, patch_class):
    """The suite's max_upper_rate and min_runs (a full ledger's policy, else the script's),
    and the runs per node of the patch's class."""
    policy = ledger.get("policy") or {}
    min_runs = policy.get("min_runs") or SCRIPT_RUNS
    max_upper_rate = policy.get("max_upper_rate") or SCRIPT_MAX_UPPER_RATE
    return max_upper_rate, min_runs, min_runs * CLASS_RUNS_FACTOR[patch_class]


def measure_tier_2(board, args, ledger, records, patch_class, notes):
    """Measure the selection's tier-2 nodes that ran, and print the report's gate: the
    board's (--upload), else judged here against the ledger. Its exit code; None when no
    tier-2 node was selected (then there is no report)."""
    ran = [r["node"] for r in records if r["property_check"] != "not_run"]
    tiers = node_tiers(board, args, ran)
    chosen = [node for node in ran if tiers.get(node) == REPEAT_BUDGET_TIER]
    if not chosen:
        print("MEASURE: no tier-2 node was selected; nothing to measure, no report.",
              file=notes)
        return None
    max_upper_rate, min_runs, runs = class_budget(ledger, patch_class)
    print(f"MEASURE {len(chosen)} tier-2 node{'s' * (len(chosen) != 1)}, {runs} runs each "
          f"({patch_class} patch: {CLASS_RUNS_FACTOR[patch_class]} x min_runs {min_runs})",
          file=notes, flush=True)
    targets = [Target(name, runs, SCRIPT_SEED_BASE) for name in chosen]
    progress = Progress(sys.stderr)
    slots = run_measurement(targets, MEASURE_DEFAULTS, max_upper_rate, progress)
    progress.summary(targets, slots)
    rows = [target.row() for target in targets]
    write_atomically(args.report, json.dumps(rows, indent=2))
    if not args.upload:
        today = time.strftime("%Y-%m-%d", time.gmtime())
        lines, code = gate_lines(rows, ledger_entries(ledger, True), today, max_upper_rate,
                                 min_runs)
        _print_lines(lines)
        return code
    envelope = {"measurements": [dict(t.row(), classification=t.classification)
                                 for t in targets],
                "commit": args.commit, "evidence": args.evidence,
                "selected_total": len(records)}
    answer = _upload(board, args, "reports", body=json.dumps(envelope).encode("utf-8"))
    return present(answer, "report", args)


def combined_exit_code(batch_code, report_code):
    """gate --measure's one exit code: 1 when the batch rejects or the report fails, else 2
    when the batch holds, else 0."""
    if 1 in (batch_code, report_code):
        return 1
    return 2 if batch_code == 2 else 0


# --- gate.py: the gate command: a pytest run's signal records, arbitrated -------------


# pytest's own exit codes for a run that never got to the tests' outcomes.
PYTEST_INTERNAL_ERROR, PYTEST_USAGE_ERROR = 3, 4


def ci_run_url(environ):
    """The CI run's page, when the CI says where it is (GitHub Actions, GitLab CI)."""
    parts = [environ.get(name, "") for name in
             ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    if all(parts):
        return f"{parts[0].rstrip('/')}/{parts[1]}/actions/runs/{parts[2]}"
    return environ.get("CI_JOB_URL", "")


def patch_seed(environ):
    """The PATCH_SEED in force, as a number; None when it is not set."""
    text = environ.get("PATCH_SEED", "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"PATCH_SEED must be a whole number (got {text!r})") from None


def gate_ledger(board, args, notes):
    """The full view of the suite's ledger: --ledger FILE's, else the board's (through
    --cache under its outage rules)."""
    if args.ledger:
        try:
            ledger, full = read_ledger_file(args.ledger)
        except NotALedger:
            full = False
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read the ledger {args.ledger}: {exc}") from None
        if not full:
            raise UsageError(f"{args.ledger} is not the full view of a ledger, which holds "
                             f"the fixture pin: flakeboard_ci.py ledger --full writes it")
        return ledger
    ledger, args.suite = fetch_ledger(board, args.suite, full=True, cache_dir=args.cache,
                                      offline_max_age=args.offline_max_age, notes=notes)
    return ledger


def live_entries(ledger, today):
    """The ledger's unexpired entries by node: each freezes its node."""
    return {e["node"]: e for e in ledger["entries"] if e["expires"] >= today}


def fixture_state(folders, pin, seed, notes):
    """The fixture manifest's digest (None without one) and the lock it gives against the
    suite's pin, as the board will find it."""
    if not folders:
        return None, effective_fixture_lock("match", None, seed, pin)
    try:
        digest = fixture_manifest(folders).digest
    except FixturesMissing as exc:
        print(f"FIXTURES MISSING: {exc}: every node holds (fixture_missing)", file=notes)
        return None, "missing"
    lock = effective_fixture_lock("match", digest, seed, pin)
    if lock == "drifted":
        print(f"FIXTURES DRIFTED: the manifest {digest} with PATCH_SEED={seed} is not the "
              f"suite's pin {pin['manifest']} with seed {pin['seed']}: every node holds "
              f"(fixture_drifted)", file=notes)
    return digest, lock


def run_pytest(pytest_args, leave_out, folder):
    """Run pytest once over the selection, with this file as the plugin that records each
    selected node's outcome; what it recorded. Its output goes to stderr."""
    recorded = os.path.join(folder, "outcomes.json")
    options = [f"--flakeboard-record={recorded}", "--continue-on-collection-errors"]
    if leave_out:
        listed = os.path.join(folder, "leave-out.txt")
        with open(listed, "w", encoding="utf-8") as handle:
            handle.write("".join(f"{node}\n" for node in leave_out))
        options.append(f"--flakeboard-leave-out={listed}")
    command, env = plugin_pytest(sys.executable, [*options, *pytest_args], dict(os.environ))
    sys.stdout.flush()
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(),
                            env=env)
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        code = proc.wait()  # pytest was interrupted too: what it reached still counts
    try:
        with open(recorded, encoding="utf-8") as handle:
            run = json.load(handle)
    except (OSError, ValueError):
        run = None  # pytest stopped before its session ended: a usage error, a crash
    if run is None or run["exitstatus"] in (PYTEST_INTERNAL_ERROR, PYTEST_USAGE_ERROR):
        raise UsageError(f"pytest could not run the selection (exit code "
                         f"{code if run is None else run['exitstatus']}): see its output "
                         f"above")
    return run


def signal_records(run, digest, lock, seed, frozen):
    """A record per selected node, and one per file that failed to collect (not run)."""
    outcomes = list(run["outcomes"]) + [[path, "not_run"] for path, _ in
                                        run["collection_errors"]]
    records, seen = [], set()
    for node, outcome in outcomes:
        if node in seen:
            continue
        seen.add(node)
        entry = frozen.get(node)
        records.append({"node": node, "property_check": outcome, "fixture_lock": lock,
                        "flake_status": "frozen" if entry else "stable",
                        "fixture_manifest": digest, "seed": seed,
                        "freeze_expires": entry["expires"] if entry else None})
    return records


def cmd_gate(board, args):
    environ = os.environ
    notes = sys.stderr if output_format(args, environ) == "json" else sys.stdout
    seed = patch_seed(environ)
    args.evidence = args.evidence or ci_run_url(environ)
    risk = None
    if args.diff:
        risk = classify_diff(git_diff(args.diff))
        print(risk.summary(), file=notes)
    ledger = gate_ledger(board, args, notes)
    frozen = live_entries(ledger, time.strftime("%Y-%m-%d", time.gmtime()))
    digest, lock = fixture_state(args.fixtures, ledger.get("fixture_pin"), seed, notes)
    folder = tempfile.mkdtemp(prefix="flakeboard-gate-")
    try:
        run = run_pytest(args.pytest_args, sorted(frozen) if args.deselect_frozen else [],
                         folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for path, line in run["collection_errors"]:
        print(f"COLLECTION ERROR {path}: {line} (sent as not run: the batch holds)",
              file=notes)
    for node in run["deselected_frozen"]:
        entry = frozen[node]
        print(f"LEFT OUT {node}: frozen until {entry['expires']} by {entry['owner']} "
              f"(--deselect-frozen)", file=notes)
    records = signal_records(run, digest, lock, seed, frozen)
    envelope = {"patch": args.patch, "commit": args.commit, "evidence": args.evidence,
                "deselected_frozen": run["deselected_frozen"], "records": records}
    if risk is not None:
        envelope.update(patch_class=risk.patch_class, risky_lines=risk.lines)
    body = json.dumps(envelope, indent=2, ensure_ascii=False) + "\n"
    try:
        write_atomically(args.output, body)
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc.strerror}") from None
    if not args.upload:
        print(f"Judged here with the board's precedence table; nothing was uploaded "
              f"(--upload sends {args.output} as a batch).", file=notes)
        code = present(local_answer(records, frozen), "signals", args)
    else:
        answer = _upload(board, args, "verdicts", body=body.encode("utf-8"),
                         patch=args.patch, commit=args.commit)
        code = present(answer, "signals", args)
    if not args.measure:
        return code
    patch_class = risk.patch_class if risk is not None else "low"
    try:
        report_code = measure_tier_2(board, args, ledger, records, patch_class, notes)
    except KeyboardInterrupt:
        print("flakeboard: gate's measurement was interrupted; no report was written.",
              file=sys.stderr)
        return 130
    return code if report_code is None else combined_exit_code(code, report_code)


# --- plugin.py: this file as the pytest plugin measure's workers and gate load --------


def pytest_addoption(parser):
    parser.addoption("--flakeboard-worker", metavar="ID:ADDRESS",
                     help="(flakeboard_ci.py measure's own) run the tests it sends")
    parser.addoption("--flakeboard-record", metavar="PATH",
                     help="(flakeboard_ci.py gate's own) write each selected node's outcome "
                          "to PATH")
    parser.addoption("--flakeboard-leave-out", metavar="PATH",
                     help="(flakeboard_ci.py gate's own) leave the node ids of PATH, one a "
                          "line, out of the run")


def pytest_configure(config):
    address = config.getoption("flakeboard_worker", None)
    if address:
        config.pluginmanager.register(MeasureWorker(address), "flakeboard-measure-worker")
    record = config.getoption("flakeboard_record", None)
    if record:
        leave_out = config.getoption("flakeboard_leave_out", None)
        frozen = []
        if leave_out:
            with open(leave_out, encoding="utf-8") as handle:
                frozen = [line for line in handle.read().splitlines() if line]
        config.pluginmanager.register(GateRecorder(record, frozen), "flakeboard-gate-recorder")


# --- cli.py: the command line, the entry point ----------------------------------------


def measure_parser(commands):
    measure = commands.add_parser(
        "measure", help="run the targets' repeats, write flake-report.json and gate it",
        description="The budget script's drop-in: reads the targets file, runs each target n "
                    "times (run i with PATCH_SEED=seed_base+i, PYTHONHASHSEED=0), writes "
                    "flake-report.json in the script's shape and gates it against "
                    "flake_ledger.json. Each worker is one pytest process that collects once "
                    "and repeats the tests in process; a target stops early once it is over "
                    "budget with 95% confidence (--exact runs all n). Tests that read "
                    "PATCH_SEED at import time need --fresh: in process, they would see the "
                    "first seed only.")
    measure.add_argument("targets", nargs="?", default="flake_targets.txt",
                         help="node ids, one a line (default flake_targets.txt)")
    measure.add_argument("--runs", type=int,
                         help=f"runs per target (default $FLAKE_RUNS, else {SCRIPT_RUNS})")
    measure.add_argument("--workers", type=int, help="pytest processes (default: one per CPU)")
    measure.add_argument("--seed-base", type=int, default=SCRIPT_SEED_BASE,
                         help=f"run i sees PATCH_SEED=seed_base+i (default {SCRIPT_SEED_BASE})")
    measure.add_argument("--exact", action="store_true",
                         help="run every target n times: no early stop")
    measure.add_argument("--fresh", action="store_true",
                         help="a fresh pytest process per run, as the script starts one, in "
                              "parallel: for tests that read PATCH_SEED at import time or "
                              "that repeating in one process changes (repeat_unsafe ones "
                              "are measured so anyway)")
    measure.add_argument("--timeout", dest="run_timeout", type=float, metavar="SECONDS",
                         help="stop a run (its collection aside) after SECONDS and count it "
                              "as a failure")
    measure.add_argument("--max-upper-rate", type=float, metavar="RATE",
                         help="the budget the early stop and the gate use (default: the "
                              "board's policy with --upload, else a full ledger's, else "
                              f"{SCRIPT_MAX_UPPER_RATE})")
    measure.add_argument("-o", "--output", default="flake-report.json",
                         help="the report (default flake-report.json)")
    measure.add_argument("--ledger", default="flake_ledger.json",
                         help="gate against this ledger when it exists (default "
                              "flake_ledger.json; ledger --full's file also gives the policy)")
    measure.add_argument("--upload", action="store_true",
                         help="upload the report (with each target's classification) and "
                              "exit with the board's code")
    measure.add_argument("--commit", default="")
    measure.add_argument("--branch", default="")
    measure.add_argument("--evidence", default="", help="a CI run reference or URL")
    return measure


def pin_and_gate_parsers(commands):
    pin = commands.add_parser(
        "pin", help="print the fixture manifest's digest and the seed, to set as the pin",
        description="One sha256 digest over every regular file of the fixture folders "
                    "(paths relative to the git checkout's top, else the current folder), "
                    "the same on every OS and checkout. A lead sets it and the seed as the "
                    "suite's fixture pin on the board.")
    pin.add_argument("--fixtures", action="append", required=True, metavar="DIR",
                     help="a fixture folder (repeatable)")
    pin.add_argument("--seed", type=int, required=True, help="the PATCH_SEED of the pin")

    gate = commands.add_parser(
        "gate", allow_abbrev=False,
        usage="%(prog)s [PYTEST ARGS...] [--patch ID] [--commit SHA] [--fixtures DIR]... "
              "[--deselect-frozen] [--diff RANGE] [--measure] [--upload]",
        help="run the tests once and arbitrate each node's signal records",
        description="Runs pytest once over the selection (every argument gate does not know "
                    "is pytest's; after -- all are), and sends each selected node's outcome, "
                    "the fixture manifest with PATCH_SEED, and its freeze from the ledger as "
                    "signal records: judged here with the board's precedence table, or by "
                    "the board with --upload. Exit 0 accept, 1 reject, 2 hold; with "
                    "--measure 1 when the batch rejects or the report fails, else 2 when "
                    "the batch holds, else 0.")
    gate.add_argument("--patch", default="", help="the candidate patch's id")
    gate.add_argument("--commit", default="")
    gate.add_argument("--evidence", default="",
                      help="a CI run reference or URL (default: the CI run's page, on GitHub "
                           "Actions and GitLab CI)")
    gate.add_argument("--fixtures", action="append", default=[], metavar="DIR",
                      help="a fixture folder of the pin (repeatable)")
    gate.add_argument("--deselect-frozen", action="store_true",
                      help="leave the frozen nodes out of the run and the batch (the batch "
                           "records which)")
    gate.add_argument("--diff", metavar="RANGE",
                      help="classify the patch by git diff RANGE's added source lines that "
                           "touch concurrency or time (low, medium, high), sent with the "
                           "batch")
    gate.add_argument("--measure", action="store_true",
                      help="then measure the selection's tier-2 nodes (the suite's tier "
                           "rules) with min_runs, 2 x or 4 x min_runs runs by the patch's "
                           "class (low without --diff), and gate the report too")
    gate.add_argument("--report", default="flake-report.json",
                      help="where --measure writes the report (default flake-report.json)")
    gate.add_argument("--upload", action="store_true",
                      help="send the records (and --measure's report) to the board and exit "
                           "with its verdict")
    gate.add_argument("--output", default="signals.json",
                      help="where the records are written (default signals.json)")
    gate.add_argument("--ledger", metavar="FILE",
                      help="read freezes and the pin from this full ledger (ledger --full), "
                           "not from the board")
    add_cache_arguments(gate)
    return gate


def add_cache_arguments(command):
    command.add_argument("--cache", metavar="DIR",
                         help="keep the last good ledger in DIR, for when the board is down")
    command.add_argument("--offline-max-age", type=duration, metavar="AGE",
                         help="serve the cache when the board cannot be reached if it is "
                              "younger than AGE (6h, 90m, 2d; default 6h with --cache)")


def parse_args(argv):
    parser = Parser(
        prog="flakeboard_ci.py",
        description="Fetch the Flakeboard ledger and upload gate evidence from CI.",
        epilog="Environment: FLAKEBOARD_URL, FLAKEBOARD_TOKEN, FLAKEBOARD_SUITE (optional).",
    )
    parser.add_argument("--url", default=os.environ.get("FLAKEBOARD_URL", ""),
                        help="the board (default: $FLAKEBOARD_URL)")
    parser.add_argument("--suite", default=os.environ.get("FLAKEBOARD_SUITE", ""),
                        help="the suite's slug (default: $FLAKEBOARD_SUITE, else the token's)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds per request")
    parser.add_argument("--retries", type=int, default=2,
                        help="retries when the board cannot be reached (default 2)")
    commands = parser.add_subparsers(dest="command", required=True)

    ledger = commands.add_parser("ledger", help="write the ledger to flake_ledger.json")
    ledger.add_argument("-o", "--output",
                        help="default flake_ledger.json (with --full: flake_ledger_full.json)")
    ledger.add_argument("--full", action="store_true",
                        help="the full view (states, ages, violations), not the script's file")
    add_cache_arguments(ledger)

    report = commands.add_parser("report", help="upload flake-report.json and gate it")
    report.add_argument("file", nargs="?", default="flake-report.json")
    report.add_argument("--commit", default="")
    report.add_argument("--branch", default="")
    report.add_argument("--evidence", default="", help="a CI run reference or URL")

    signals = commands.add_parser("signals", help="upload signal records and arbitrate them")
    signals.add_argument("file")
    signals.add_argument("--patch", default="")
    signals.add_argument("--commit", default="")
    signals.add_argument("--evidence", default="", help="a CI run reference or URL")

    junit = commands.add_parser(
        "junit", help="upload JUnit XML files: passive evidence of flaky tests")
    junit.add_argument("files", nargs="+", metavar="FILE")
    junit.add_argument("--commit", required=True, help="the commit the tests ran on")
    junit.add_argument("--branch", default="")
    junit.add_argument("--job", default="",
                       help="the CI job: each cell of a matrix is a job of its own")
    junit.add_argument("--attempt", type=int, default=1,
                       help="the job's attempt: 2 for its first re-run (default 1)")
    junit.add_argument("--format", choices=FORMATS,
                       help="default text; github when $GITHUB_ACTIONS is true")

    measure = measure_parser(commands)
    gate = pin_and_gate_parsers(commands)
    for upload in (report, signals, measure, gate):
        upload.add_argument("--dry-run", action="store_true", help="evaluate, store nothing")
        upload.add_argument("--all", action="store_true", help="list every passing node")
        upload.add_argument("--only-failures", action="store_true",
                            help="list only the failing nodes (FAIL, REJECT, HOLD)")
        upload.add_argument("--format", choices=FORMATS,
                            help="default text; github when $GITHUB_ACTIONS is true, "
                                 "gitlab when $GITLAB_CI is true")
        upload.add_argument("--codequality", metavar="PATH",
                            help="also write a GitLab Code Quality report to PATH")
    args, pytest_args = parser.parse_known_args(argv)
    if args.command != "gate" and pytest_args:
        parser.error(f"unrecognized arguments: {' '.join(pytest_args)}")
    if "--" in pytest_args:
        pytest_args.remove("--")
    args.pytest_args = pytest_args
    if args.command == "junit" and args.attempt < 1:
        parser.error("--attempt must be at least 1")
    if args.command in ("ledger", "gate"):
        if args.offline_max_age is not None and not args.cache:
            parser.error("--offline-max-age needs --cache DIR")
        if args.offline_max_age is None:
            args.offline_max_age = DURATION_UNITS["h"] * 6
    return args


def board_from(args):
    """The board of FLAKEBOARD_URL (or --url) and FLAKEBOARD_TOKEN; UsageError without them."""
    token = os.environ.get("FLAKEBOARD_TOKEN", "").strip()
    if not args.url:
        raise UsageError("set FLAKEBOARD_URL (or --url) to the board's address.")
    if not token:
        raise UsageError("set FLAKEBOARD_TOKEN to an API token of the suite.")
    if urllib.parse.urlsplit(args.url).scheme not in ("http", "https"):
        raise UsageError(f"the board's address must start with https:// (got {args.url}).")
    return Board(args.url, token, timeout=args.timeout, retries=max(0, args.retries))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    command = {"ledger": cmd_ledger, "report": cmd_report, "signals": cmd_signals,
               "measure": cmd_measure, "junit": cmd_junit, "pin": cmd_pin, "gate": cmd_gate}
    # measure needs the board only to upload, gate also to read the ledger and the tiers,
    # pin never.
    needs_board = {"measure": getattr(args, "upload", False), "pin": False,
                   "gate": (getattr(args, "upload", False) or getattr(args, "measure", False)
                            or not getattr(args, "ledger", None))}
    board = None
    try:
        if needs_board.get(args.command, True):
            board = board_from(args)
        return command[args.command](board, args)
    except UsageError as exc:
        print(f"flakeboard: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Unreachable as exc:
        print(f"flakeboard: cannot reach the board at {board.url}: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except Refused as exc:
        body = exc.body if isinstance(exc.body, dict) else {}
        print(f"flakeboard: the board refused the request ({exc.status} "
              f"{body.get('error', 'error')}): {body.get('message', '')}", file=sys.stderr)
        for detail in body.get("details") or []:
            where = ", ".join(
                f"{key} {detail[key]}" for key in ("row", "field")
                if detail.get(key) is not None
            )
            print(f"  {where + ': ' if where else ''}{detail.get('message', '')}",
                  file=sys.stderr)
        return EXIT_REFUSED


if __name__ == "__main__":
    sys.exit(main())
