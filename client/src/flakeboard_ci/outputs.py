"""Presenting the board's answer: text, GitHub Actions, GitLab CI, Markdown and JSON, and
GitLab's Code Quality report."""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import sys
import time
import urllib.parse

from .core import UsageError
from .failure_lines import INDENT, failure_text
from .stats import birth_sentence

# ``why``: why gate --measure measured the node (SPEC 2.4c), where it says; ``failure``:
# the line that explains a failed node (failure_lines.py), printed under it.
Row = collections.namedtuple("Row", "node status reason flags line url why failure",
                             defaults=("", ""))
# Worst first: rows that fail the job (FAIL, REJECT, then HOLD), warnings, passing rows.
# The new-test guard's reasons (docs/new-tests.md): their rows say what the runs bound.
NEW_TEST_REASONS = ("new_test_flaky", "new_test_clean")
RANK = {"FAIL": 0, "REJECT": 0, "HOLD": 1, "WARN": 2, "OK": 3, "ACCEPT": 3}
FAILING, WARNING, PASSING = ("FAIL", "REJECT", "HOLD"), ("WARN",), ("OK", "ACCEPT")


def view(answer, kind):
    """The answer's rows worst first, its summary parts (head, reason, details), and the
    word for a passing row."""
    if kind == "report":
        rows = [Row(m["nodeid"], m["status"], m["reason"], m["flags"], _measurement_line(m),
                    m.get("url"), m.get("measured_because") or "", failure_text(m))
                for m in answer["measurements"]]
        counts, share = answer["counts"], answer["share"]
        details = (f"{counts['measurements']} measurements, {counts['fail']} FAIL, "
                   f"{counts['warn']} WARN, {counts['ok']} OK; {share_words(share)}")
        head, passing = f"report {answer['status']}", "OK"
    else:
        rows = []
        for r in answer["records"]:
            verdict = r["verdict"].upper()
            rows.append(Row(r["node"], verdict, r["reason"], r["flags"],
                            f"{verdict:<6} {r['node']}: {r['reason']}"
                            f"{_entry_note(r.get('entry'))}{_flags(r['flags'])}",
                            r.get("url"), "", failure_text(r)))
        reasons = sorted(answer["reason_counts"].items())
        details = (f"{len(rows)} records; "
                   f"{', '.join(f'{reason} {n}' for reason, n in reasons) or 'no records'}")
        head, passing = f"batch {answer['verdict'].upper()}", "ACCEPT"
    rows.sort(key=lambda row: RANK[row.status])
    if answer.get("attempt", 1) > 1:
        same = "patch and commit" if kind != "report" else "commit"
        details = f"attempt {answer['attempt']} at this {same}; {details}"
    return rows, (head, answer["reason"], details), passing


# What the board's test set counted, by where its size came from.
SIZE_SOURCE_WORDS = {"ci_run": "tests CI ran", "known_nodes": "known nodes"}


def share_words(share):
    """The quarantined share as the board judged it: of the board's own test set, with the
    number of tests this run selected beside it (which the board does not count by)."""
    size = share["test_set_size"]
    counted = SIZE_SOURCE_WORDS.get(share.get("size_source"))
    selected = share.get("selected_total")
    return (f"quarantined share {share['share']:.1%} of {size}{f' {counted}' if counted else ''}"
            f" (cap {share['cap']:.1%}"
            f"{'' if selected is None else f'; this run selected {selected}'})")


NEXT_STEP = ("a retry will not change the verdict: measure it, and quarantine it if it is "
             "tier 2 and over budget")


def earlier_evidence(answer, kind):
    """A line per node whose answer earlier uploads at the same commit decide (SPEC 2.4a):
    the node, the earlier attempt and its page, and what to do next."""
    earlier = {e["attempt"]: e for e in answer.get("earlier_attempts") or []}
    if not earlier:
        return []
    lines = []
    if kind == "report":
        by_id = {e["id"]: e for e in earlier.values()}
        for m in answer["measurements"]:
            pooled = m.get("pooled") or {}
            if m["status"] != "FAIL" or not pooled.get("reports"):
                continue
            first = by_id.get(pooled["reports"][0], {})
            lines.append(
                f"{m['nodeid']}: pooled with the earlier measurements at this commit "
                f"(attempt {first.get('attempt', '?')}: {first.get('url', 'on the board')}): "
                f"{pooled['fails']}/{pooled['n']} failed, upper95={pooled['upper95']:.4f}; "
                f"a luckier measurement does not replace an unlucky one")
        return lines
    for r in answer["records"]:
        failed = [a for a in r.get("attempts", {}).get("failed_in", []) if a in earlier]
        if r["verdict"] != "reject" or not failed:
            continue
        # An attempt whose runner broke (infrastructure) counts, and is no flaky evidence.
        broken = set(r["attempts"].get("infrastructure_in", []))
        flipped = set(failed) - broken and set(r["attempts"]["passed_in"]) - broken
        said = (" and passed in another (flaky evidence)" if flipped
                else ", an infrastructure failure (its runner broke; not flaky evidence)"
                if failed[0] in broken else "")
        lines.append(f"{r['node']}: failed in attempt {failed[0]} "
                     f"({earlier[failed[0]]['url']}){said}; {NEXT_STEP}")
    return lines


def _measurement_line(m):
    if m["reason"] in NEW_TEST_REASONS:
        # The guard's runs of a new test, pooled at the commit: what they bound.
        counts = m.get("pooled") or m
        clean = "; not a budget claim" if m["status"] == "OK" else ""
        line = (f"{m['status']:<4} {m['nodeid']}: {m['reason']} "
                f"({birth_sentence(counts['n'], counts['fails'])}{clean})")
        return line + _entry_note(m.get("entry")) + _flags(m["flags"]) + _measured_because(m)
    line = (f"{m['status']:<4} {m['nodeid']}: {m['reason']} "
            f"(upper95={m['upper95']:.4f}, {m['fails']}/{m['n']} failed)")
    return line + _entry_note(m.get("entry")) + _flags(m["flags"]) + _measured_because(m)


def _measured_because(m):
    """Why gate --measure measured the node (SPEC 2.4c), where it says."""
    return f"; measured: {m['measured_because']}" if m.get("measured_because") else ""


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
        sys.stdout.write(markdown_summary(answer, kind, rows, summary, args.only_failures))
        return int(answer["exit_code"])
    failing, warning, passed = (group(rows, statuses) for statuses in (FAILING, WARNING, PASSING))
    shown = failing if args.only_failures else failing + warning
    passed_line = None
    if not args.only_failures and passed:
        passed_line = f"{len(passed)} {passing}"
        if not args.all:
            passed_line += ", not listed (--all lists them)"
    decided = earlier_evidence(answer, kind)
    if fmt == "gitlab":
        with gitlab_section(f"flakeboard_{kind}", f"Flakeboard: {summary[0]} ({summary[1]})"):
            _print_lines(explained(shown))
            _print_lines(decided)
        if passed_line:
            with gitlab_section(f"flakeboard_{kind}_passing", passed_line, collapsed=True):
                _print_lines(row.line for row in passed if args.all)
    else:
        _print_lines(explained(shown))
        if passed_line:
            _print_lines([row.line for row in passed] if args.all else [passed_line])
        _print_lines(decided)
    if fmt == "github":
        _print_lines(github_annotations(failing if args.only_failures else rows,
                                        answer.get("url")))
        _print_lines("::notice::" + github_data(line) for line in decided)
        path = environ.get("GITHUB_STEP_SUMMARY")
        if path:
            used = os.path.getsize(path) if os.path.exists(path) else 0
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(markdown_summary(answer, kind, rows, summary, args.only_failures,
                                              limit=SUMMARY_LIMIT - used))
    head, reason, details = summary
    print(f"{head} ({reason}): {details}")
    return _finish(answer)


def explained(rows):
    """Each row's line, and under a failed node's the line that explains it."""
    for row in rows:
        yield row.line
        if row.failure:
            yield INDENT + row.failure


def _print_lines(lines):
    for line in lines:
        print(line)


def _finish(answer):
    if answer.get("duplicate"):
        repeats = answer.get("repeats_attempt")
        if repeats:
            print(f"This body was uploaded before (attempt {repeats}): nothing new was "
                  f"stored, and the answer judges every attempt at this commit as they "
                  f"stand now.")
        else:  # a board older than replays answers the stored result
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
            message = "\n".join(explained([row]))
            yield (f"::{command} file={github_property(node_file(row.node))},"
                   f"title={github_property(title)}::{github_data(message)}")
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


def markdown_summary(answer, kind, rows, summary, only_failures=False, limit=SUMMARY_LIMIT):
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
    if decided := [f"- {markdown_text(line)}\n" for line in earlier_evidence(answer, kind)]:
        parts += [*decided, "\n"]
    listed = group(rows, FAILING) + ([] if only_failures else group(rows, WARNING))
    if listed:
        parts.append("| node | status | reason | flags | board |\n|---|---|---|---|---|\n")
    size = sum(len(part.encode()) for part in parts) + 1  # + the last line end
    for index, row in enumerate(listed):
        page = f"[node]({_markdown_url(row.url)})" if row.url else link
        reason = (row.reason + (f"; measured: {row.why}" if row.why else "")
                  + (f" \u2014 {row.failure}" if row.failure else ""))
        line = (f"| {markdown_text(row.node)} | {row.status} | {markdown_text(reason)} | "
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
