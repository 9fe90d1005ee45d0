"""The ledger command, and the cache of the last good ledger for when the board is down."""

from __future__ import annotations

import argparse
import calendar
import contextlib
import json
import os
import re
import sys
import tempfile
import time

from .board import decoded, quote, suite_slug
from .core import Unreachable


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
