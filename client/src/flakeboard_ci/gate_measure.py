"""gate --measure: after the run, the selection's tier-2 nodes (by the suite's tier rules,
asked of the board) measured with the repeat budget of the patch's class, in process as
`measure` does, and the report judged here or uploaded beside the batch."""

from __future__ import annotations

import argparse
import json
import sys
import time

from .board import _upload, quote, suite_slug
from .ledger import ledger_entries, write_atomically
from .measure import Progress, gate_lines, run_measurement, uploaded_row
from .measure_bisect import BISECT_MAX
from .measure_runs import (
    SCRIPT_MAX_UPPER_RATE,
    SCRIPT_RUNS,
    SCRIPT_SEED_BASE,
    Target,
)
from .outputs import _print_lines, present
from .patch_class import CLASS_RUNS_FACTOR
from .stats import NEW_TEST_MIN_RUNS, birth_sentence

# How many node ids one tiers request asks about: well under the board's upload limit.
TIERS_CHUNK = 5000
REPEAT_BUDGET_TIER = 2
# measure's own defaults for what gate has no option for: one worker per CPU, the early
# stop, in process, no timeout.
# Its CI run was the session: each target is checked after its module only.
MEASURE_DEFAULTS = argparse.Namespace(workers=None, exact=False, fresh=False,
                                      run_timeout=None, order="module", bisect_max=BISECT_MAX)


# The new-test guard (docs/new-tests.md): each new tier-2 node runs the suite's
# new_test_runs times (the tiers answer's, else NEW_TEST_RUNS), or as many as fit
# NEW_TEST_SECONDS by its time in gate's run, never fewer than NEW_TEST_MIN_RUNS (Datadog's
# EFD: 10 runs under 5 s, 5 under 30 s, 3 under 5 min). When more than the suite's
# new_test_share of the selection is new, the first ones up to that share are.
NEW_TEST_RUNS = 30
NEW_TEST_SECONDS = 60.0
NEW_TEST_SHARE = 0.30


def node_tiers(board, args, nodes):
    """Each node's tier by the suite's tier rules, whether it is new at --commit (None
    without one), and the suite's guard (runs and share), as the board answers them."""
    args.suite = suite_slug(board, args.suite)
    tiers, new = {}, {}
    guard = {"runs": NEW_TEST_RUNS, "share": NEW_TEST_SHARE}
    for start in range(0, len(nodes), TIERS_CHUNK):
        chunk = nodes[start:start + TIERS_CHUNK]
        answer, _ = board.call("POST", f"/api/v1/suites/{quote(args.suite)}/tiers",
                               query={"commit": args.commit},
                               body=json.dumps(chunk).encode("utf-8"))
        for row in answer["tiers"]:
            tiers[row["node"]] = row["tier"]
            new[row["node"]] = row.get("new")
        guard.update(answer.get("new_tests") or {})
    return tiers, new, guard


def guard_runs(seconds, most=NEW_TEST_RUNS):
    """A new node's runs by its time in gate's run: as many as fit NEW_TEST_SECONDS, between
    NEW_TEST_MIN_RUNS and ``most`` (the suite's new_test_runs)."""
    if not seconds or seconds <= 0:
        return most
    return max(NEW_TEST_MIN_RUNS, min(most, int(NEW_TEST_SECONDS // seconds)))


def guarded(new_nodes, selected, notes, share=NEW_TEST_SHARE):
    """The new nodes the guard measures: all of them, or when more than ``share`` (the
    suite's new_test_share) of the selection is new, the first ones up to that share (said,
    as EFD does)."""
    most = max(1, int(share * selected))
    if len(new_nodes) <= most:
        return new_nodes
    print(f"NEW: {len(new_nodes)} of the {selected} selected tests are new, over "
          f"{share:.0%}: the guard measures the first {most}; the others ran once",
          file=notes)
    return new_nodes[:most]


def class_budget(ledger, patch_class):
    """The suite's max_upper_rate and min_runs (a full ledger's policy, else the script's),
    and the runs per node of the patch's class."""
    policy = ledger.get("policy") or {}
    min_runs = policy.get("min_runs") or SCRIPT_RUNS
    max_upper_rate = policy.get("max_upper_rate") or SCRIPT_MAX_UPPER_RATE
    return max_upper_rate, min_runs, min_runs * CLASS_RUNS_FACTOR[patch_class]


def measure_tier_2(board, args, ledger, records, patch_class, notes, seconds=None):
    """Measure the selection's tier-2 nodes that ran: those new at --commit with the
    new-test guard's runs, the others with the repeat budget of the patch's class; and
    print the report's gate: the board's (--upload), else judged here against the ledger.
    Its exit code; None when no tier-2 node was selected (then there is no report)."""
    ran = [r["node"] for r in records if r["property_check"] != "not_run"]
    tiers, new, guard_policy = node_tiers(board, args, ran)
    chosen = [node for node in ran if tiers.get(node) == REPEAT_BUDGET_TIER]
    born = guarded([node for node in chosen if new.get(node)], len(records), notes,
                   guard_policy["share"])
    known = [node for node in chosen if not new.get(node)]
    if not born and not known:
        print("MEASURE: no tier-2 node was selected; nothing to measure, no report.",
              file=notes)
        return None
    max_upper_rate, min_runs, runs = class_budget(ledger, patch_class)
    targets = []
    if known:
        print(f"MEASURE {len(known)} tier-2 node{'s' * (len(known) != 1)}, {runs} runs each "
              f"({patch_class} patch: {CLASS_RUNS_FACTOR[patch_class]} x min_runs "
              f"{min_runs})", file=notes, flush=True)
        targets = [Target(name, runs, SCRIPT_SEED_BASE) for name in known]
    if born:
        print(f"NEW {len(born)} tier-2 node{'s' * (len(born) != 1)} new at "
              f"{args.commit[:12]}: the guard runs each up to {guard_policy['runs']} times, "
              f"fewer when slow", file=notes, flush=True)
    guard = [Target(name, guard_runs((seconds or {}).get(name), guard_policy["runs"]),
                    SCRIPT_SEED_BASE) for name in born]
    for target in guard:
        target.birth = True
    targets += guard
    progress = Progress(sys.stderr)
    slots = run_measurement(targets, MEASURE_DEFAULTS, max_upper_rate, progress)
    progress.summary(targets, slots)
    for target in guard:
        print(f"NEW {target.name}: {birth_sentence(target.done, target.fails)}", file=notes)
    rows = [target.row() for target in targets]
    write_atomically(args.report, json.dumps(rows, indent=2))
    if not args.upload:
        today = time.strftime("%Y-%m-%d", time.gmtime())
        lines, code = gate_lines(rows, ledger_entries(ledger, True), today, max_upper_rate,
                                 min_runs, new={target.name for target in guard})
        _print_lines(lines)
        return code
    envelope = {"measurements": [dict(uploaded_row(target), new_test=True) if target in guard
                                 else uploaded_row(target) for target in targets],
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
