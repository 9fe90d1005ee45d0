#!/usr/bin/env python3
"""Flakeboard's CI client: fetch the quarantine ledger, upload a flake report or signal
records, print what the board decided for each node, and exit with the gate's code.

One file, standard library only. Fetch it from the board itself:

    curl -fsSO "$FLAKEBOARD_URL/ci/flakeboard_ci.py"

    python3 flakeboard_ci.py ledger                  # writes flake_ledger.json
    python3 flakeboard_ci.py report flake-report.json --commit "$SHA" --branch main
    python3 flakeboard_ci.py signals signals.json --patch "$PATCH_ID"

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
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

VERSION = "1"
EXIT_UNREACHABLE = 3
EXIT_REFUSED = 4
EXIT_USAGE = 64
UNREACHABLE_STATUSES = (502, 503, 504)
LIST_ALL_UP_TO = 200  # passing nodes are listed one by one up to this many


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
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v})
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json",
            "User-Agent": f"flakeboard-ci/{VERSION}",
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
                return _json(response.read()), dict(response.headers)
        except urllib.error.HTTPError as exc:
            payload = _json(exc.read())
            if exc.code in UNREACHABLE_STATUSES:
                raise Unreachable(f"the board answered {exc.code} {exc.reason}") from None
            raise Refused(exc.code, payload) from None
        except OSError as exc:  # URLError, refused connections and timeouts alike
            reason = getattr(exc, "reason", exc)
            raise Unreachable(str(reason)) from None


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
    slug = suite_slug(board, args.suite)
    query = {"view": "full"} if args.full else None
    ledger, _ = board.call("GET", f"/api/v1/suites/{quote(slug)}/ledger", query=query)
    output = args.output or ("flake_ledger_full.json" if args.full else "flake_ledger.json")
    partial = output + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(ledger, indent=2, ensure_ascii=False) + "\n")
    os.replace(partial, output)
    entries = {e["node"]: e for e in ledger["entries"]} if args.full else ledger
    today = time.strftime("%Y-%m-%d", time.gmtime())
    expired = sorted(node for node, e in entries.items() if e["expires"] < today)
    for node in expired:
        entry = entries[node]
        print(f"EXPIRED {node}: quarantine expired on {entry['expires']} "
              f"(owner {entry['owner']}); the budget gate fails it")
    print(f"Wrote {output}: {len(entries)} quarantine entr"
          f"{'y' if len(entries) == 1 else 'ies'} of suite {slug}, {len(expired)} expired.")
    return 0


def cmd_report(board, args):
    answer = _upload(board, args, "reports", commit=args.commit, branch=args.branch)
    shown, left_out = _shown(answer["measurements"], lambda m: m["status"] == "OK", args.all)
    for m in shown:
        line = (f"{m['status']:<4} {m['nodeid']}: {m['reason']} "
                f"(upper95={m['upper95']:.4f}, {m['fails']}/{m['n']} failed)")
        if m.get("entry"):
            line += f"; quarantined until {m['entry']['expires']} by {m['entry']['owner']}"
        print(line + _flags(m["flags"]))
    if left_out:
        print(f"     ... and {left_out} more OK (--all lists them)")
    counts, share = answer["counts"], answer["share"]
    print(f"report {answer['status']} ({answer['reason']}): {counts['measurements']} "
          f"measurements, {counts['fail']} FAIL, {counts['warn']} WARN, {counts['ok']} OK; "
          f"quarantined share {share['share']:.1%} of {share['test_set_size']} "
          f"(cap {share['cap']:.1%})")
    return _finish(answer)


def cmd_signals(board, args):
    answer = _upload(board, args, "verdicts", patch=args.patch, commit=args.commit)
    shown, left_out = _shown(answer["records"], lambda r: r["verdict"] == "accept", args.all)
    for r in shown:
        print(f"{r['verdict'].upper():<6} {r['node']}: {r['reason']}{_flags(r['flags'])}")
    if left_out:
        print(f"       ... and {left_out} more ACCEPT (--all lists them)")
    counts = ", ".join(f"{reason} {n}" for reason, n in sorted(answer["reason_counts"].items()))
    print(f"batch {answer['verdict'].upper()} ({answer['reason']}): "
          f"{len(answer['records'])} records; {counts or 'no records'}")
    return _finish(answer)


def _upload(board, args, endpoint, **meta):
    """POST the upload file to the suite's ``endpoint``: the board's decoded answer."""
    slug = suite_slug(board, args.suite)
    query = dict(meta, evidence=args.evidence, dry_run="1" if args.dry_run else "")
    answer, _ = board.call("POST", f"/api/v1/suites/{quote(slug)}/{endpoint}", query=query,
                           body=read_upload(args.file))
    return answer


def _shown(rows, passed, show_all):
    """The rows to print, and how many passing ones are left out: past LIST_ALL_UP_TO
    passing rows, only the others are listed."""
    passing = sum(1 for row in rows if passed(row))
    if show_all or passing <= LIST_ALL_UP_TO:
        return rows, 0
    return [row for row in rows if not passed(row)], passing


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
    return parser.parse_args(argv)


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
