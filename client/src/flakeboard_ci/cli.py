"""The command line: the arguments of each command, and main, which maps failures to exit
codes."""

from __future__ import annotations

import os
import sys
import urllib.parse

from .board import Board, IdTokenUnavailable, credential_from
from .core import (
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    FORMATS,
    SOURCE_HASH,
    VERSION,
    Parser,
    Refused,
    Unreachable,
    UsageError,
)
from .gate import cmd_gate
from .junit import cmd_junit
from .ledger import DURATION_UNITS, cmd_ledger, duration
from .measure import cmd_measure
from .measure_bisect import BISECT_MAX
from .measure_experiments import DIAGNOSE_BUDGET
from .measure_runs import SCRIPT_MAX_UPPER_RATE, SCRIPT_RUNS, SCRIPT_SEED_BASE
from .pin import cmd_pin
from .replay import cmd_replay
from .report import cmd_report, cmd_signals


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
    measure.add_argument("--order", choices=("session", "module"), default="session",
                         help="where to look for the tests an order-dependent target depends "
                              "on: session (default) runs the whole session once as a bare "
                              "pytest collects it, each target where CI runs it; module only "
                              "runs each after the tests before it in its module (cheaper on "
                              "a very large suite)")
    measure.add_argument("--bisect-max", type=int, default=BISECT_MAX, metavar="RUNS",
                         help="the fresh processes a bisection to the tests an "
                              "order-dependent target depends on may take (default "
                              f"{BISECT_MAX}); past it, the smallest set found is named")
    measure.add_argument("--diagnose-budget", type=float, default=DIAGNOSE_BUDGET,
                         metavar="SECONDS",
                         help="the seconds a flaky target's diagnosis may start experiments "
                              "within: its failing seeds replayed, then runs under CPU load "
                              f"(default {DIAGNOSE_BUDGET:g})")
    measure.add_argument("--no-diagnose", dest="diagnose", action="store_false",
                         help="no diagnosis's experiments for the targets measured flaky")
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


def replay_parser(commands):
    replay = commands.add_parser(
        "replay", help="run a flaky test again at a seed, or under CPU load, as measure did",
        description="Runs the test as measure ran it: PATCH_SEED=SEED, PYTHONHASHSEED=0, and "
                    "Python's random (and numpy's, when imported) seeded from PATCH_SEED "
                    "before its setup and its call. One run is a fresh pytest, with its "
                    "output and exit code (a seeded test fails again at its failing seed). "
                    "--runs N runs seeds SEED to SEED+N-1 in one process, as measure runs a "
                    "block, and exits 1 when any failed; --stress adds a busy process per "
                    "core while it runs.")
    replay.add_argument("node", help="the test's node id")
    replay.add_argument("--seed", type=int, default=SCRIPT_SEED_BASE,
                        help=f"the run's PATCH_SEED (default {SCRIPT_SEED_BASE})")
    replay.add_argument("--runs", type=int, default=1, help="runs, from --seed on (default 1)")
    replay.add_argument("--stress", action="store_true",
                        help="under CPU load: a busy process per core")
    return replay


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
              "[--deselect-frozen] [--diff RANGE] [--measure [all]] [--measure-budget SECONDS] "
              "[--record-impact] [--upload]",
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
    gate.add_argument("--measure", nargs="?", const="patch", choices=("patch", "all"),
                      help="then measure the selection's tier-2 nodes (the suite's tier "
                           "rules) that the patch calls for: those that failed in this run, "
                           "the new ones, those of the test files --diff changed and the "
                           "suite's flaky-prone ones, in that order within --measure-budget, "
                           "with min_runs, 2 x or 4 x min_runs runs by the patch's class "
                           "(low without --diff); --measure all measures every selected "
                           "tier-2 node, with no budget; and gate the report too")
    gate.add_argument("--measure-budget", type=float, metavar="SECONDS",
                      help="the seconds --measure may spend, estimated from each node's time "
                           "in this run (default: the suite's measure budget, on its "
                           "settings page)")
    gate.add_argument("--record-impact", action="store_true",
                      help="record which source files each test executes and send that map "
                           "to the board, replacing the suite's (run it on the default "
                           "branch: a pull request's gate --measure then measures the tests "
                           "that execute the files it changes)")
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


def measure_words(argv):
    """gate's ``--measure`` takes an optional word, ``all``: any other argument after it is
    pytest's (``--measure tests/``), so a bare ``--measure`` is written as its default."""
    argv, words = list(argv), []
    for index, word in enumerate(argv):
        if word == "--":
            return words + argv[index:]
        if word == "--measure":
            following = argv[index + 1] if index + 1 < len(argv) else None
            word = "--measure=all" if following == "all" else "--measure=patch"
            if following == "all":
                argv[index + 1] = None
        if word is not None:
            words.append(word)
    return words


def parse_args(argv):
    parser = Parser(
        prog="flakeboard_ci.py",
        description="Fetch the Flakeboard ledger and upload gate evidence from CI.",
        epilog="Environment: FLAKEBOARD_URL, FLAKEBOARD_TOKEN (or the CI's id token: "
               "FLAKEBOARD_ID_TOKEN, GitHub's ACTIONS_ID_TOKEN_REQUEST_*), FLAKEBOARD_SUITE.",
    )
    parser.add_argument("--version", action="version",
                        version=f"flakeboard_ci.py {VERSION} (build {SOURCE_HASH})")
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
    junit.add_argument("--branch", default=None,
                       help="the branch the job ran on (default: the CI's own variable, "
                            "GITHUB_HEAD_REF or GITHUB_REF_NAME, CI_COMMIT_BRANCH, ...); "
                            "JUnit of the suite's default branch sizes the test set")
    junit.add_argument("--job", default="",
                       help="the CI job: each cell of a matrix is a job of its own")
    junit.add_argument("--attempt", type=int, default=None,
                       help="the job's attempt: 2 for its first re-run (default 1; with "
                            "the CI's id token, its signed run attempt)")
    junit.add_argument("--format", choices=FORMATS,
                       help="default text; github when $GITHUB_ACTIONS is true")

    measure = measure_parser(commands)
    gate = pin_and_gate_parsers(commands)
    replay_parser(commands)
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
    args, pytest_args = parser.parse_known_args(measure_words(argv))
    if args.command != "gate" and pytest_args:
        parser.error(f"unrecognized arguments: {' '.join(pytest_args)}")
    if "--" in pytest_args:
        pytest_args.remove("--")
    args.pytest_args = pytest_args
    if args.command == "junit" and args.attempt is not None and args.attempt < 1:
        parser.error("--attempt must be at least 1")
    if args.command == "measure" and not args.diagnose_budget >= 0:
        parser.error("--diagnose-budget must be a number of seconds, 0 or more")
    if args.command == "gate" and args.measure_budget is not None:
        if args.measure_budget < 0 or args.measure_budget != args.measure_budget:
            parser.error("--measure-budget must be a number of seconds, 0 or more")
        if not args.measure:
            parser.error("--measure-budget needs --measure")
    if args.command in ("ledger", "gate"):
        if args.offline_max_age is not None and not args.cache:
            parser.error("--offline-max-age needs --cache DIR")
        if args.offline_max_age is None:
            args.offline_max_age = DURATION_UNITS["h"] * 6
    return args


def board_from(args):
    """The board of FLAKEBOARD_URL (or --url), with FLAKEBOARD_TOKEN or the CI's id token
    (``board.credential_from``); UsageError without them."""
    if not args.url:
        raise UsageError("set FLAKEBOARD_URL (or --url) to the board's address.")
    token, id_token = credential_from(os.environ, args.url.rstrip("/"), args.timeout)
    if not token:
        raise UsageError("set FLAKEBOARD_TOKEN to an API token of the suite, or let the job "
                         "have its CI's id token (GitHub: permissions: id-token: write; "
                         "GitLab: id_tokens: FLAKEBOARD_ID_TOKEN).")
    if id_token and not args.suite:
        raise UsageError("with the CI's id token, set FLAKEBOARD_SUITE (or --suite): the "
                         "board checks it against that suite's trusted CI.")
    if urllib.parse.urlsplit(args.url).scheme not in ("http", "https"):
        raise UsageError(f"the board's address must start with https:// (got {args.url}).")
    return Board(args.url, token, timeout=args.timeout, retries=max(0, args.retries))


def wants_board(args):
    """measure without --upload asks the board for CI's order at --commit when one is
    configured; without one it measures all the same."""
    return (args.command == "measure" and bool(args.commit) and args.order == "session"
            and bool(args.url) and bool(credential_from(os.environ, args.url, 0)[0]))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    command = {"ledger": cmd_ledger, "report": cmd_report, "signals": cmd_signals,
               "measure": cmd_measure, "junit": cmd_junit, "pin": cmd_pin, "gate": cmd_gate,
               "replay": cmd_replay}
    # measure needs the board only to upload, gate also to read the ledger and the tiers,
    # pin never.
    needs_board = {"measure": getattr(args, "upload", False), "pin": False, "replay": False,
                   "gate": (getattr(args, "upload", False) or getattr(args, "measure", False)
                            or getattr(args, "record_impact", False)
                            or not getattr(args, "ledger", None))}
    board = None
    try:
        if needs_board.get(args.command, True) or wants_board(args):
            board = board_from(args)
        return command[args.command](board, args)
    except UsageError as exc:
        print(f"flakeboard: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except IdTokenUnavailable as exc:
        print(f"flakeboard: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
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
