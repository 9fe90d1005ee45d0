"""Every failure of a patch's gate explained (docs/ci-client.md): the board's ``failure``
of each failed node (its label, its line and the evidence behind them), asked of the board
when the gate judged here, printed under the node in every format; after --measure, the
label again with the gate's own measurement of the node (failure_labels.py)."""

from __future__ import annotations

import json

from .board import quote, suite_slug
from .core import Refused, Unreachable
from .failure_labels import FailureEvidence, failure_label

# The failed nodes one request asks the board to explain: the board's most.
EXPLAINED_MAX = 1000
INDENT = "    "


def failure_text(row):
    """The line under a row's node: its ``failure``'s, then why a flaky one is flaky (its
    ``diagnosis``, docs/diagnosis.md); "" when it has neither."""
    failure = row.get("failure")
    return "; ".join(text for text in (failure["line"] if failure else "",
                                       diagnosis_text(row.get("diagnosis"))) if text)


def diagnosis_text(diagnosis):
    """A measured node's diagnosis as the board answers it: its category, the strongest
    evidence and the command that reproduces it; for ``unknown``, what was tried, and
    nothing when nothing was."""
    if not diagnosis:
        return ""
    text = f"why flaky: {diagnosis['category']}"
    evidence, tried = diagnosis.get("evidence") or [], diagnosis.get("tried") or []
    if evidence:
        text += f" ({evidence[0]})"
    elif tried:
        text += f" (tried: {', '.join(tried)})"
    else:
        return ""  # unknown, and nothing tried: nothing to say
    return text + (f"; reproduce: {diagnosis['command']}" if diagnosis.get("command") else "")


def failures_asked(board, args, answer, notes):
    """A locally judged answer's failed rows given the board's ``failure`` of them, as an
    uploaded batch's carry it; a board that cannot say leaves them unexplained (said), and
    so does a gate without a board."""
    failed = [row for row in answer["records"] if row["verdict"] == "reject"]
    if not failed or board is None:  # gate --ledger FILE alone asks no board
        return answer
    try:
        slug = suite_slug(board, args.suite)
        asked, _ = board.call("POST", f"/api/v1/suites/{quote(slug)}/failures",
                              body=json.dumps([row["node"] for row in
                                               failed[:EXPLAINED_MAX]]).encode("utf-8"))
    except (Refused, Unreachable) as exc:
        print(f"FAILURES: the board could not explain the failed tests ({exc}); they are "
              f"listed without it", file=notes)
        return answer
    explained = {row.pop("node"): row for row in asked.get("nodes") or []}
    for row in failed:
        row["failure"] = explained.get(row["node"])
    return answer


def failures_of(answer):
    """The batch's failed nodes' ``failure``, by node."""
    return {row["node"]: row["failure"] for row in answer.get("records") or []
            if row.get("failure")}


def remeasured(failures, measured):
    """Each failed node the gate measured, its ``failure`` labelled again with its
    measurement's classification (``measured``: by node): it confirms or corrects the
    board's label (a node measured broken is not known flaky)."""
    again = {}
    for node, failure in failures.items():
        if not measured.get(node):
            continue
        evidence = failure["evidence"]
        entry, flaky = evidence.get("entry"), evidence.get("flaky")
        label, line = failure_label(FailureEvidence(
            entry=(entry["owner"], entry["expires"]) if entry else None,
            flaky=(flaky["rate"], flaky["upper95"], flaky["since"], flaky["diagnosis"])
            if flaky else None,
            default_failures=tuple(evidence.get("default_failures") or ()),
            passed_on_default=evidence.get("passed_on_default"),
            measured=measured[node]))
        again[node] = dict(failure, label=label, line=line, measured=measured[node])
    return again


def with_failures(answer, failures):
    """A report's answer, each measured failed node's row carrying its ``failure``."""
    for row in answer.get("measurements") or []:
        if row.get("nodeid") in failures:
            row["failure"] = failures[row["nodeid"]]
    return answer


def lines_under(lines, failures):
    """Each (line, node), then the line of its node's failure (indented) where it has one."""
    for line, node in lines:
        yield line
        if node in failures:
            yield INDENT + failures[node]["line"]
