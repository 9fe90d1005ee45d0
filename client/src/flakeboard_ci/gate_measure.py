"""gate --measure: after the run, the selection's tier-2 nodes (by the suite's tier rules,
asked of the board) measured with the repeat budget of the patch's class, in process as
`measure` does, and the report judged here or uploaded beside the batch."""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time

from .board import _upload, quote, suite_slug
from .failure_lines import lines_under, remeasured, with_failures
from .gate_plan import (
    MEASURE_BUDGET_SECONDS,
    MEASURED_BECAUSE,
    PlanCandidate,
    gate_plan,
    in_changed_file,
)
from .impact import tests_of_changed
from .ledger import ledger_entries, write_atomically
from .measure import gate_lines, run_measurement, start_pool, uploaded_row
from .measure_bisect import BISECT_MAX
from .measure_progress import Progress
from .measure_runs import (
    SCRIPT_MAX_UPPER_RATE,
    SCRIPT_RUNS,
    SCRIPT_SEED_BASE,
    Target,
)
from .measure_workspace import Workspace
from .outputs import _print_lines, node_file, present
from .patch_class import CLASS_RUNS_FACTOR
from .stats import NEW_TEST_MIN_RUNS, birth_sentence

# How many node ids one tiers request asks about: well under the board's upload limit.
TIERS_CHUNK = 5000
# How many flaky nodes the targets file may list (the board's most) for the plan's fourth
# group.
TARGETS_LIMIT = 1000
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
    without one), the suite's guard (runs and share) and its measure budget in seconds, as
    the board answers them."""
    args.suite = suite_slug(board, args.suite)
    tiers, new = {}, {}
    guard = {"runs": NEW_TEST_RUNS, "share": NEW_TEST_SHARE}
    budget = MEASURE_BUDGET_SECONDS
    for start in range(0, len(nodes), TIERS_CHUNK):
        chunk = nodes[start:start + TIERS_CHUNK]
        answer, _ = board.call("POST", f"/api/v1/suites/{quote(args.suite)}/tiers",
                               query={"commit": args.commit},
                               body=json.dumps(chunk).encode("utf-8"))
        for row in answer["tiers"]:
            tiers[row["node"]] = row["tier"]
            new[row["node"]] = row.get("new")
        guard.update(answer.get("new_tests") or {})
        budget = answer.get("measure_budget", budget)
    return tiers, new, guard, budget


def flaky_prone(board, args):
    """The suite's targets (marked to measure, or flaky in the last 30 days and not measured
    within budget since), as the board's targets file lists them."""
    _, raw, _ = board.fetch("GET", f"/api/v1/suites/{quote(args.suite)}/targets",
                            query={"limit": TARGETS_LIMIT})
    return {line.strip() for line in raw.decode("utf-8", "replace").splitlines()
            if line.strip()}


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


def measure_tier_2(board, args, ledger, records, patch_class, notes, seconds=None,
                   changed=(), failures=None):
    """Measure the selection's tier-2 nodes that ran as the plan says (SPEC 2.4c): the
    failed, the new (with the new-test guard's runs), the changed test files', the
    flaky-prone ones and those the impact map says execute a changed file, within the
    budget, the others with the repeat budget of the patch's class (--measure all: every
    one, no budget); and print the report's gate: the board's (--upload), else judged here
    against the ledger, each failed node's ``failure`` (the batch's, by node) labelled
    again with its measurement. Its exit code; None when the plan measures nothing (then
    there is no report)."""
    seconds = seconds or {}
    ran = [r["node"] for r in records if r["property_check"] != "not_run"]
    failed = {r["node"] for r in records if r["property_check"] == "fail"}
    tiers, new, guard_policy, budget = node_tiers(board, args, ran)
    chosen = [node for node in ran if tiers.get(node) == REPEAT_BUDGET_TIER]
    if not chosen:
        print("MEASURE: no tier-2 node was selected; nothing to measure, no report.",
              file=notes)
        return None
    # measure's workspace, and its pool's base (pytest, the plugins and the conftests loaded),
    # are made while the board is asked for more.
    workspace, progress = Workspace(), Progress(sys.stderr)
    files = list(collections.OrderedDict.fromkeys(node_file(node) for node in chosen))
    pool = start_pool(workspace, MEASURE_DEFAULTS, progress, files)
    try:
        return measure_chosen(board, args, ledger, records, patch_class, notes, seconds,
                              changed, failures, chosen, new, guard_policy, budget, failed,
                              (workspace, pool, progress))
    finally:
        pool.close()
        workspace.discard()


def measure_chosen(board, args, ledger, records, patch_class, notes, seconds, changed,
                   failures, chosen, new, guard_policy, budget, failed, started):
    """measure_tier_2's measurement of the ``chosen`` tier-2 nodes, with what it ``started``
    (the workspace, the pool, the progress)."""
    workspace, pool, progress = started
    every_node = args.measure == "all"
    new_nodes = [node for node in chosen if new.get(node)]
    born = set(guarded(new_nodes, len(records), notes, guard_policy["share"]))
    once = set(new_nodes) - born  # the guard's share let them run once
    max_upper_rate, min_runs, runs = class_budget(ledger, patch_class)
    flaky = set() if every_node else flaky_prone(board, args)
    # The suite's impact map: the tests that execute a changed file (none without --diff).
    executes = tests_of_changed(board, args, changed) if changed and not every_node else {}
    candidates = [
        PlanCandidate(node, seconds.get(node) or 0.0,
                      guard_runs(seconds.get(node), guard_policy["runs"]) if node in born
                      else runs,
                      failed=node in failed, new=node in born,
                      changed_file=in_changed_file(node, changed), flaky=node in flaky,
                      executes_changed=executes.get(node, ""))
        for node in chosen if node not in once
    ]
    if args.measure_budget is not None:
        budget = args.measure_budget
    plan = gate_plan(candidates, None if every_node else budget, every_node,
                     workers=MEASURE_DEFAULTS.workers or os.cpu_count() or 1)
    print_plan(plan, len(chosen), patch_class, min_runs, runs, notes)
    if not plan.measured:
        print("MEASURE: nothing to measure, no report.", file=notes)
        return None
    if born & {planned.node for planned in plan.measured}:
        print(f"NEW {len(born)} tier-2 node{'s' * (len(born) != 1)} new at "
              f"{args.commit[:12]}: the guard runs each up to {guard_policy['runs']} times, "
              f"fewer when slow", file=notes, flush=True)
    # Measured in the plan's order, reported in the run's (the board's report names its
    # first failing row's reason).
    targets = []
    for planned in plan.measured:
        target = Target(planned.node, planned.runs, SCRIPT_SEED_BASE)
        target.birth = planned.node in born
        targets.append(target)
    run_order = {node: index for index, node in enumerate(chosen)}
    # The budget holds in real time: no block of runs starts once it has run out.
    slots = run_measurement(targets, MEASURE_DEFAULTS, max_upper_rate, progress,
                            budget=plan.budget, workspace=workspace, pool=pool)
    targets, plan = budget_cut(targets, plan, notes)
    progress.summary(targets, slots)
    if not targets:
        print("MEASURE: the budget ran out before any run started, no report.", file=notes)
        return None
    targets.sort(key=lambda target: run_order[target.name])
    guard = [target for target in targets if target.birth]
    for target in guard:
        print(f"NEW {target.name}: {birth_sentence(target.done, target.fails)}", file=notes)
    why = {planned.node: planned.why for planned in plan.measured}
    failures = remeasured(failures or {}, {t.name: t.classification for t in targets})
    rows = [target.row() for target in targets]
    write_atomically(args.report, json.dumps(rows, indent=2))
    if not args.upload:
        today = time.strftime("%Y-%m-%d", time.gmtime())
        lines, code = gate_lines(rows, ledger_entries(ledger, True), today, max_upper_rate,
                                 min_runs, new={target.name for target in guard})
        nodes = [row["nodeid"] for row in rows]
        _print_lines(lines_under([(f"{line}; measured: {why[nodes[index]]}", nodes[index])
                                  for index, line in enumerate(lines)], failures))
        return code
    envelope = {"measurements": [dict(uploaded_row(target), new_test=True) if target.birth
                                 else uploaded_row(target) for target in targets],
                "commit": args.commit, "evidence": args.evidence,
                "selected_total": len(records)}
    answer = _upload(board, args, "reports", body=json.dumps(envelope).encode("utf-8"))
    return present(with_failures(with_plan(answer, plan, len(chosen)), failures), "report",
                   args)


def budget_cut(targets, plan, notes):
    """The targets measured, and the plan with those the budget's deadline left without a
    run moved to its over-budget nodes: each of those is named as the plan names the
    nodes it left out, and each target cut short after some of its runs is said (its row
    counts the runs it has, and the board judges those)."""
    unstarted = {target.name for target in targets if target.cut and not target.done}
    for target in targets:
        if target.name in unstarted:
            planned = next(p for p in plan.measured if p.node == target.name)
            print(f"NOT MEASURED (budget) {target.name}: {planned.why}; the budget of "
                  f"{plan.budget:g} s ran out before its runs started", file=notes)
        elif target.cut:
            print(f"BUDGET: {target.name} cut short after {target.done} of {target.runs} "
                  f"runs: the budget of {plan.budget:g} s ran out", file=notes)
    if not unstarted:
        return targets, plan
    measured = tuple(p for p in plan.measured if p.node not in unstarted)
    over = tuple(p for p in plan.measured if p.node in unstarted) + plan.over_budget
    plan = plan._replace(measured=measured, over_budget=over,
                         left_to_nightly=plan.left_to_nightly + len(unstarted))
    print(f"BUDGET: {tier_2_nodes(len(unstarted))} of the plan got no run before the budget "
          f"of {plan.budget:g} s ran out; left to the nightly measure with the others: "
          f"{tier_2_nodes(plan.left_to_nightly)} in all", file=notes)
    return [target for target in targets if target.name not in unstarted], plan


def tier_2_nodes(count):
    return f"{count} tier-2 node{'s' * (count != 1)}"


def print_plan(plan, tier_2, patch_class, min_runs, runs, notes):
    """The plan in lines: what is measured and why (by group), what the budget left out
    (each named with its group, and each group it cut short), and how many tier-2 nodes
    were left to the nightly measure."""
    by_group = collections.Counter(planned.group for planned in plan.measured)
    groups = ", ".join(f"{n} {MEASURED_BECAUSE[name]}" for name, n in by_group.items())
    within = ("no budget" if plan.budget is None
              else f"budget {plan.budget:g} s, about {plan.cost:.0f} s planned")
    print(f"MEASURE {tier_2_nodes(len(plan.measured))}, {runs} runs each ({patch_class} "
          f"patch: {CLASS_RUNS_FACTOR[patch_class]} x min_runs {min_runs}; a new one the "
          f"guard's), of {tier_2} selected: {groups or 'none'} ({within})",
          file=notes, flush=True)
    for planned in plan.measured:
        print(f"  {planned.node}: {planned.runs} runs, {planned.why}", file=notes)
    for planned in plan.over_budget:
        print(f"NOT MEASURED (budget) {planned.node}: {planned.why}", file=notes)
    for name in plan.cut_groups:
        total = sum(1 for planned in plan.measured + plan.over_budget if planned.group == name)
        done = sum(1 for planned in plan.measured if planned.group == name)
        print(f"BUDGET: {MEASURED_BECAUSE[name]}: {done} of {total} measured, the group was "
              f"cut short by the budget of {plan.budget:g} s (--measure-budget)", file=notes)
    print(f"NIGHTLY: {tier_2_nodes(plan.left_to_nightly)} ran once here and "
          f"{'was' if plan.left_to_nightly == 1 else 'were'} not measured: their standing "
          f"evidence is the ledger and the nightly measure", file=notes, flush=True)


def plan_answer(plan, tier_2):
    """The plan as the JSON output carries it."""
    return {"budget": plan.budget, "tier_2": tier_2, "planned_seconds": round(plan.cost, 3),
            "measured": [{"nodeid": p.node, "group": p.group, "why": p.why, "runs": p.runs}
                         for p in plan.measured],
            "not_measured_budget": [{"nodeid": p.node, "group": p.group, "why": p.why}
                                    for p in plan.over_budget],
            "cut_groups": list(plan.cut_groups), "left_to_nightly": plan.left_to_nightly}


def with_plan(answer, plan, tier_2):
    """The board's answer with why each measured node was measured (``measured_because``
    on its row) and the plan, for every output."""
    why = {planned.node: planned.why for planned in plan.measured}
    for row in answer.get("measurements") or []:
        if row.get("nodeid") in why:
            row["measured_because"] = why[row["nodeid"]]
    answer["plan"] = plan_answer(plan, tier_2)
    return answer


def combined_exit_code(batch_code, report_code):
    """gate --measure's one exit code: 1 when the batch rejects or the report fails, else 2
    when the batch holds, else 0."""
    if 1 in (batch_code, report_code):
        return 1
    return 2 if batch_code == 2 else 0
