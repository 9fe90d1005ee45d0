#!/usr/bin/env python3
"""Flakeboard's CI client: fetch the quarantine ledger, upload a flake report or signal
records, print what the board decided for each node, and exit with the gate's code.

One file, standard library only. Fetch it from the board itself:

    curl -fsSO "$FLAKEBOARD_URL/ci/flakeboard_ci.py"

    python3 flakeboard_ci.py ledger                  # writes flake_ledger.json
    python3 flakeboard_ci.py ledger --cache .flakeboard-cache --offline-max-age 6h
    python3 flakeboard_ci.py report flake-report.json --commit "$SHA" --branch main
    python3 flakeboard_ci.py signals signals.json --patch "$PATCH_ID"

`report` and `signals` print the failing nodes first. --format text|github|gitlab|markdown|json
picks the output (github when $GITHUB_ACTIONS is true, gitlab when $GITLAB_CI is true);
--codequality PATH also writes a GitLab Code Quality report.

`ledger --cache DIR` keeps the last good ledger in DIR and revalidates it (If-None-Match).
When the board cannot be reached, a cached ledger younger than --offline-max-age (default
6h) is written instead, with a warning, and the command exits 0; an older cache fails
closed (exit 3). A refusal is never covered by the cache (exit 4).

Environment:
    FLAKEBOARD_URL     the board, e.g. https://flakeboard.example.com (required)
    FLAKEBOARD_TOKEN   an API token of the suite: read for `ledger`, write for uploads
    FLAKEBOARD_SUITE   the suite's slug (optional: by default, the token's own suite)

Exit codes:
    0  report passes (OK or WARN) / batch accepted / ledger fetched
    1  report fails / batch rejected
    2  batch on hold
    3  the board could not be reached (network, DNS, timeout, 502-504)
    4  the board refused the request (token, suite, invalid upload, ...): see the message
    64 wrong usage or unreadable input file
"""

from __future__ import annotations

import argparse
import calendar
import collections
import contextlib
import hashlib
import http.client
import json
import os
import re
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

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


# --- talking to the board ------------------------------------------------------------


class Board:
    def __init__(self, url, token, *, timeout, retries):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries

    def call(self, method, path, *, query=None, body=None):
        """The decoded JSON answer, its headers; Refused or Unreachable otherwise."""
        _, raw, headers = self.fetch(method, path, query=query, body=body)
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
            headers["Content-Type"] = "application/json"
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


# --- the three commands ----------------------------------------------------------------


def cmd_ledger(board, args):
    cache = LedgerCache(args.cache, board.url, args.suite, args.full) if args.cache else None
    cached = cache.load() if cache else None
    try:
        slug = suite_slug(board, args.suite)
        query = {"view": "full"} if args.full else None
        headers = {"If-None-Match": cached["etag"]} if cached and cached["etag"] else None
        status, raw, answer_headers = board.fetch(
            "GET", f"/api/v1/suites/{quote(slug)}/ledger", query=query, headers=headers)
        if status == 304 and cached:
            print("The cached ledger is current (304 Not Modified).")
            raw = cached["body"].encode("utf-8")
        ledger = decoded(raw)
        try:
            ledger_entries(ledger, args.full)
        except ValueError:
            raise Unreachable("the board's answer is not a ledger") from None
        if cache:
            cache.save(raw, answer_headers.get("ETag") or "", slug)
    except Unreachable as exc:
        if cache is None:
            raise
        ledger, slug = cache.offline(cached, exc, args.offline_max_age)
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


def ledger_entries(ledger, full):
    """The ledger's entries by node; ValueError when it is not a ledger."""
    try:
        entries = {e["node"]: e for e in ledger["entries"]} if full else ledger
        if all(isinstance(e["expires"], str) and "owner" in e for e in entries.values()):
            return entries
    except (KeyError, TypeError, AttributeError):
        pass
    raise ValueError("not a ledger")


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


def cmd_report(board, args):
    answer = _upload(board, args, "reports", commit=args.commit, branch=args.branch)
    return present(answer, "report", args)


def cmd_signals(board, args):
    answer = _upload(board, args, "verdicts", patch=args.patch, commit=args.commit)
    return present(answer, "signals", args)


def _upload(board, args, endpoint, **meta):
    """POST the upload file to the suite's ``endpoint``: the board's decoded answer."""
    slug = suite_slug(board, args.suite)
    query = dict(meta, evidence=args.evidence, dry_run="1" if args.dry_run else "")
    answer, _ = board.call("POST", f"/api/v1/suites/{quote(slug)}/{endpoint}", query=query,
                           body=read_upload(args.file))
    return answer


def _flags(flags):
    return f" [{', '.join(flags)}]" if flags else ""


def _finish(answer):
    if answer.get("duplicate"):
        print("This body was uploaded before: the board answered its stored result.")
    if answer.get("dry_run"):
        print("Dry run: nothing was stored.")
    if answer.get("url"):
        print(answer["url"])
    print(f"exit code {answer['exit_code']}")
    return int(answer["exit_code"])


def quote(slug):
    return urllib.parse.quote(slug, safe="")


# --- presenting the board's answer ---------------------------------------------------

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


# --- entry point ---------------------------------------------------------------------


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
    ledger.add_argument("--cache", metavar="DIR",
                        help="keep the last good ledger in DIR, for when the board is down")
    ledger.add_argument("--offline-max-age", type=duration, metavar="AGE",
                        help="serve the cache when the board cannot be reached if it is "
                             "younger than AGE (6h, 90m, 2d; default 6h with --cache)")

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

    for upload in (report, signals):
        upload.add_argument("--dry-run", action="store_true", help="evaluate, store nothing")
        upload.add_argument("--all", action="store_true", help="list every passing node")
        upload.add_argument("--only-failures", action="store_true",
                            help="list only the failing nodes (FAIL, REJECT, HOLD)")
        upload.add_argument("--format", choices=FORMATS,
                            help="default text; github when $GITHUB_ACTIONS is true, "
                                 "gitlab when $GITLAB_CI is true")
        upload.add_argument("--codequality", metavar="PATH",
                            help="also write a GitLab Code Quality report to PATH")
    args = parser.parse_args(argv)
    if args.command == "ledger":
        if args.offline_max_age is not None and not args.cache:
            parser.error("--offline-max-age needs --cache DIR")
        if args.offline_max_age is None:
            args.offline_max_age = DURATION_UNITS["h"] * 6
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    token = os.environ.get("FLAKEBOARD_TOKEN", "").strip()
    if not args.url:
        print("flakeboard: set FLAKEBOARD_URL (or --url) to the board's address.",
              file=sys.stderr)
        return EXIT_USAGE
    if not token:
        print("flakeboard: set FLAKEBOARD_TOKEN to an API token of the suite.", file=sys.stderr)
        return EXIT_USAGE
    if urllib.parse.urlsplit(args.url).scheme not in ("http", "https"):
        print(f"flakeboard: the board's address must start with https:// (got {args.url}).",
              file=sys.stderr)
        return EXIT_USAGE
    board = Board(args.url, token, timeout=args.timeout, retries=max(0, args.retries))
    command = {"ledger": cmd_ledger, "report": cmd_report, "signals": cmd_signals}
    try:
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
