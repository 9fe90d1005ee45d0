"""The measure command: the flake budget's evidence, produced fast. A drop-in for the
background article's budget script (flake_targets.txt in, flake-report.json out, the same
seeds and the same OK/WARN/FAIL lines), but each worker is one pytest process that collects
the targets once and repeats them in process.

Here: the targets file, the settings, the gate against the ledger, and the measurement
that puts the runs and the pool together (measure_progress.py: the progress on stderr)."""

from __future__ import annotations

import collections
import json
import os
import re
import sys
import time

from .board import _upload, quote, suite_slug
from .core import Refused, Unreachable, UsageError
from .ledger import NotALedger, ledger_entries, read_ledger_file, write_atomically
from .measure_bisect import CAUSE_NODES_MAX
from .measure_checks import Bisections, IsolationChecks
from .measure_experiments import diagnose
from .measure_pool import Pool
from .measure_progress import Progress
from .measure_runs import (
    SCRIPT_MAX_UPPER_RATE,
    SCRIPT_RUNS,
    CiOrder,
    Target,
    classify_in_order,
    classify_isolated,
    needs_order_check,
)
from .measure_schedule import Schedule
from .measure_sources import BlockRuns, Collection, FreshRuns
from .measure_workspace import Workspace
from .outputs import _print_lines, node_file, output_format, present
from .stats import NEW_TEST_MIN_RUNS, birth_sentence


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
    if args.bisect_max < 0:
        raise UsageError("--bisect-max must be 0 (no bisection) or more")
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


def gate_lines(rows, entries, today, max_upper_rate, min_runs, new=()):
    """The script's gate of the report against the ledger: its OK/WARN/FAIL lines and its
    exit code (1 on any FAIL). The rows of ``new`` (the new-test guard's) are judged by the
    guard first, as the board judges them (docs/new-tests.md)."""
    lines, code = [], 0
    for row in rows:
        node, entry = row["nodeid"], entries.get(row["nodeid"])
        guard = node in new and entry is None and guard_line(row, max_upper_rate, min_runs)
        if guard:
            lines.append(guard)
            code = max(code, int(guard.startswith("FAIL")))
        elif entry is not None and entry["expires"] < today:
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


def guard_line(row, max_upper_rate, min_runs):
    """The new-test guard's line for a row, or "" where the script's gate judges it: a flip
    fails new_test_flaky unless over budget at full size; a clean row of 3 runs or more,
    too short for a budget claim, passes as new_test_clean."""
    n, fails, node = row["n"], row["fails"], row["nodeid"]
    full_size_fail = n >= min_runs and not (row["upper95"] <= max_upper_rate)
    said = birth_sentence(n, fails)
    if 0 < fails < n and not full_size_fail:
        return f"FAIL {node}: flaky at birth, {said} (new_test_flaky)"
    if fails == 0 and NEW_TEST_MIN_RUNS <= n < min_runs:
        return f"OK   {node}: {said}; not a budget claim (new_test_clean)"
    return ""


def measure_policy(args, board, ledger_policy):
    """max_upper_rate and min_runs: --max-upper-rate, else the board's policy (with
    --upload), else a full ledger's, else the script's 0.02 and 200."""
    policy = {"max_upper_rate": SCRIPT_MAX_UPPER_RATE, "min_runs": SCRIPT_RUNS}
    for found in (ledger_policy, board_policy(board, args) if args.upload else None):
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


def ask_ci_order(board, args, targets, progress):
    """Give each target CI's order at --commit, where the board holds a JUnit file of the
    commit that lists it: the session check then runs it there. Without the board, or when
    it cannot say, the collection's order stands, and measure says so."""
    if board is None or not args.commit or args.order != "session":
        return
    names = [target.name for target in targets if target.unmeasured is None]
    try:
        args.suite = suite_slug(board, args.suite)
        answer, _ = board.call("POST", f"/api/v1/suites/{quote(args.suite)}/junit/order",
                               query={"commit": args.commit},
                               body=json.dumps(names).encode("utf-8"))
        files = {listed["id"]: listed for listed in answer["files"]}
        rows = {row["node"]: row for row in answer["nodes"]}
    except Refused as exc:
        why = f"the board refused the question ({exc.status})"
    except Unreachable as exc:
        why = f"the board could not be asked: {exc}"
    except (KeyError, TypeError):
        why = "the board's answer is not the order's"
    else:
        why = ""
    unknown = names
    if not why:
        unknown = []
        for target in targets:
            row = rows.get(target.name) or {}
            if row.get("file") in files:
                target.ci = CiOrder(args.commit, files[row["file"]], row["position"],
                                    row["outcome"])
            elif target.unmeasured is None:
                unknown.append(target.name)
        why = f"the board holds no JUnit of {args.commit[:12]} that lists it"
    if unknown:
        which = "every target" if len(unknown) == len(names) else ", ".join(unknown)
        progress.note(f"flakeboard: CI's order is unknown for {which} ({why}): checked in "
                      f"the session's collection order")


def start_pool(workspace, args, progress, files=()):
    """measure's pool of pytest processes, in ``workspace`` (removed when it cannot start);
    with ``files``, its base is started at once: it loads pytest, the plugins and the
    conftests while what comes before the runs goes on (gate asks the board for the plan),
    and the blocks fork from it once their files are known."""
    try:
        pool = Pool(python=sys.executable, folder=workspace.folder,
                    slots=args.workers or os.cpu_count() or 1, timeout=args.run_timeout,
                    progress=progress, plugin=workspace)
    except BaseException:
        workspace.discard()
        raise
    if files and not args.fresh:
        pool.spawn(files, zygote=True, base=True)
    return pool


def run_measurement(targets, args, max_upper_rate, progress, budget=None, workspace=None,
                    pool=None):
    """Measure the targets (each block of a target's runs in a process of its own, or a
    process per run with --fresh), check the isolation of those whose repeats all failed and
    the others in CI's order, and measure the repeat-unsafe ones again with a process per
    run. With a ``budget`` (seconds, gate's), no block of runs starts after the deadline it
    sets: a target is cut there (``Target.cut``), with the runs it has or none. Its
    ``workspace`` (a Workspace started early, else one of its own) is removed at its end,
    and its ``pool`` (start_pool's, else one of its own) closed."""
    workspace = workspace or Workspace()
    pool = pool or start_pool(workspace, args, progress)
    slots = pool.slots

    session = args.order == "session"
    deadline = None if budget is None else time.monotonic() + budget

    def schedule(chosen):
        return Schedule(chosen, early=not args.exact, max_upper_rate=max_upper_rate,
                        progress=progress, session=session, deadline=deadline)

    try:
        files = list(collections.OrderedDict.fromkeys(
            node_file(t.name) for t in targets if t.unmeasured is None))
        measured = schedule(targets)
        if session and not args.fresh:
            pool.start_session()  # it collects the session while the runs go on
        if args.fresh:
            pool.run(Collection(targets, files))
            pool.run(FreshRuns(measured))
        else:
            pool.run(BlockRuns(measured, files))
        measured.cut()
        targets = [t for t in targets if t.unmeasured is None and not (t.cut and not t.done)]
        # Past the deadline, the isolation checks of the targets whose runs all failed still
        # run: two processes each, and they decide between broken, order_dependent and
        # repeat_unsafe. The checks in CI's order of the others (up to ORDER_CHECKS
        # processes each), the bisections and a repeat-unsafe target's fresh runs do not
        # start: the classification by the target's own runs stands, and a repeat-unsafe
        # one is not measured (its runs in process do not count).
        suspects = [target for target in targets if target.classification is None]
        in_order = [target for target in targets if needs_order_check(target)]
        pool.run(IsolationChecks(suspects, alone=not args.fresh, tags=measured.tags,
                                 in_order=in_order, session=session, progress=progress,
                                 closed=measured.over))
        for target in in_order:
            classify_in_order(target)
        unsafe = [t for t in suspects if classify_isolated(t) == "repeat_unsafe"]
        dependent = [t for t in targets if t.suspected and t.classification == "order_dependent"]
        if dependent and args.bisect_max and not measured.over():
            pool.run(Bisections(dependent, measured.tags, args.bisect_max, progress))
        for target in unsafe:
            target.reset()
            target.cut = measured.over()
        again = schedule([target for target in unsafe if not target.cut])
        pool.run(FreshRuns(again))
        again.cut()
        for target in targets:
            if not target.reported:
                progress.finished(target)
        if getattr(args, "diagnose", None) is not None:  # measure's, not gate --measure's
            diagnose(pool, targets, measured.tags, args, max_upper_rate)
    finally:
        pool.close()
        workspace.discard()
    return slots


def uploaded_row(target):
    """A target's row as the board takes it: the report's, its classification, the tests
    an order-dependent one depends on, when a bisection named them, and the diagnosis's
    experiments of a flaky one."""
    row = dict(target.row(), classification=target.classification)
    cause = target.cause
    if (cause is not None and target.classification == "order_dependent"
            and len(cause["nodes"]) <= CAUSE_NODES_MAX):
        row["cause"] = cause
    if target.experiments:
        row["experiments"] = target.experiments
    return row


def cmd_measure(board, args):
    runs, today = measure_settings(args, os.environ)
    names = read_targets(args.targets)
    targets = [Target(name, runs, args.seed_base) for name in names]
    for target in targets:
        if not os.path.exists(node_file(target.name)):
            target.unmeasured = (f"{target.name} collects nothing: there is no "
                                 f"{node_file(target.name)}")
    if all(target.unmeasured for target in targets):
        raise UsageError("\n".join(target.unmeasured for target in targets))
    entries, ledger_policy = load_gate_ledger(args.ledger)
    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.access(folder, os.W_OK):
        raise UsageError(f"cannot write {args.output}: its folder is missing or read-only")
    max_upper_rate, min_runs = measure_policy(args, board, ledger_policy)
    progress = Progress(sys.stderr)
    workspace = Workspace()  # the plugin compiles while the board is asked
    ask_ci_order(board, args, targets, progress)
    try:
        slots = run_measurement(targets, args, max_upper_rate, progress, workspace=workspace)
    except KeyboardInterrupt:
        progress.close()
        print("flakeboard: measure was interrupted; nothing was written.", file=sys.stderr)
        return 130
    unmeasured = [target for target in targets if target.unmeasured]
    targets = [target for target in targets if not target.unmeasured]
    for target in unmeasured:
        # A JUnit id the board could only guess (a dotted folder) is one: the rest go on.
        progress.note(f"NOT MEASURED {target.unmeasured}")
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
    body = [uploaded_row(target) for target in targets]
    answer = _upload(board, args, "reports", body=json.dumps(body).encode("utf-8"),
                     commit=args.commit, branch=args.branch)
    return present(answer, "report", args)
