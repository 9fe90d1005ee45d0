"""The gate command: run the selection's tests once, turn each selected node's outcome, the
fixture pin and the ledger's freezes into signal records (SPEC 3.2), and arbitrate them,
here or on the board (--upload); with --diff the patch's class goes into the batch, and
with --measure its tier-2 nodes are measured with the class's repeat budget."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from .arbiter import effective_fixture_lock, local_answer
from .board import _upload, suite_slug
from .core import UsageError
from .failure_lines import failures_asked, failures_of
from .gate_measure import combined_exit_code, measure_tier_2
from .impact import git_root, upload_impact
from .ledger import NotALedger, fetch_ledger, read_ledger_file, write_atomically
from .measure_procs import plugin_pytest
from .outputs import output_format, present
from .patch_class import classify_diff, git_diff
from .pin import FixturesMissing, fixture_manifest, same_digest
from .signatures import signature

# pytest's own exit codes for a run that never got to the tests' outcomes.
PYTEST_INTERNAL_ERROR, PYTEST_USAGE_ERROR = 3, 4


def ci_run_url(environ):
    """The CI run's page, when the CI says where it is, naming the run's attempt: a rerun
    then sends other evidence, so the board takes it as the gate's next attempt, not as a
    replay of the first (whose answer would be the first's body judged again). GitHub
    Actions keeps a run's id over "Re-run jobs" and counts GITHUB_RUN_ATTEMPT: the page of
    that attempt. GitLab CI gives a retried job a new CI_JOB_ID: the job's page."""
    parts = [environ.get(name, "") for name in
             ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    if all(parts):
        run = f"{parts[0].rstrip('/')}/{parts[1]}/actions/runs/{parts[2]}"
        attempt = environ.get("GITHUB_RUN_ATTEMPT", "")
        return f"{run}/attempts/{attempt}" if attempt.isascii() and attempt.isdigit() else run
    if environ.get("CI_JOB_URL"):
        return environ["CI_JOB_URL"]
    parts = [environ.get(name, "") for name in ("CI_SERVER_URL", "CI_PROJECT_PATH", "CI_JOB_ID")]
    if all(parts):
        return f"{parts[0].rstrip('/')}/{parts[1]}/-/jobs/{parts[2]}"
    return ""


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
        print(f"FIXTURES DRIFTED: {drift(digest, seed, pin)}: every node holds "
              f"(fixture_drifted)", file=notes)
    return digest, lock


def drift(digest, seed, pin):
    """What differs from the suite's pin: the manifest, the seed, or both; only that."""
    differs = []
    if not same_digest(digest, pin["manifest"]):
        differs.append(f"the manifest {digest} is not the pin's {pin['manifest']}")
    if pin["seed"] is not None and seed != pin["seed"]:
        differs.append(f"PATCH_SEED={seed} is not the pin's seed {pin['seed']}")
    return " and ".join(differs)


def run_pytest(pytest_args, leave_out, folder, impact_root=None):
    """Run pytest once over the selection, with this file as the plugin that records each
    selected node's outcome (and with ``impact_root``, the source files under it each
    test executes); what it recorded. Its output goes to stderr."""
    recorded = os.path.join(folder, "outcomes.json")
    options = [f"--flakeboard-record={recorded}", "--continue-on-collection-errors"]
    if impact_root:
        options.append(f"--flakeboard-impact={impact_root}")
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
    """A record per selected node, and one per file that failed to collect (not run); a
    failed one carries its failure's signature, by which the board tells a broken runner
    (every failure alike) from failing tests."""
    outcomes = list(run["outcomes"]) + [[path, "not_run"] for path, _ in
                                        run["collection_errors"]]
    messages = run.get("messages") or {}
    records, seen = [], set()
    for node, outcome in outcomes:
        if node in seen:
            continue
        seen.add(node)
        entry = frozen.get(node)
        record = {"node": node, "property_check": outcome, "fixture_lock": lock,
                  "flake_status": "frozen" if entry else "stable",
                  "fixture_manifest": digest, "seed": seed,
                  "freeze_expires": entry["expires"] if entry else None}
        if outcome == "fail" and messages.get(node):
            record["failure_signature"] = signature(messages[node])
        records.append(record)
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
                         folder, git_root() if args.record_impact else None)
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
    if args.record_impact:
        args.suite = suite_slug(board, args.suite)
        upload_impact(board, args, run, notes)
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
        answer = failures_asked(board, args, local_answer(records, frozen), notes)
    else:
        answer = _upload(board, args, "verdicts", body=body.encode("utf-8"),
                         patch=args.patch, commit=args.commit)
    code = present(answer, "signals", args)
    if not args.measure:
        return code
    patch_class = risk.patch_class if risk is not None else "low"
    try:
        report_code = measure_tier_2(board, args, ledger, records, patch_class, notes,
                                     seconds=run.get("seconds") or {},
                                     changed=risk.changed if risk is not None else (),
                                     failures=failures_of(answer))
    except KeyboardInterrupt:
        print("flakeboard: gate's measurement was interrupted; no report was written.",
              file=sys.stderr)
        return 130
    return code if report_code is None else combined_exit_code(code, report_code)
