"""The background article's budget script, re-told for the tests: the contract that
``flakeboard_ci.py measure`` replaces, so a test can run both on one generated project and
compare what they write and print.

It reads flake_targets.txt (a node id a line), runs each target FLAKE_RUNS times, each
run a new ``python -m pytest NODEID`` with PATCH_SEED = 9137 + i and PYTHONHASHSEED = 0
(a run fails when pytest exits non-zero), writes flake-report.json (nodeid, n, fails,
upper95 to 4 places, seed_base; indent 2), prints an OK/WARN/FAIL line per target against
flake_ledger.json and exits 1 on any FAIL. Run it as a script in the project's folder.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

SEED_BASE = 9137
MAX_UPPER_RATE = 0.02
MIN_RUNS = 200


def wilson_upper(fails: int, n: int, z: float = 1.96) -> float:
    if n == 0:
        return 1.0
    rate = fails / n
    spread = z * math.sqrt(rate * (1 - rate) / n + (z / (2 * n)) ** 2)
    return min(1.0, (rate + z * z / (2 * n) + spread) / (1 + z * z / n))


def run_passes(nodeid: str, seed: int) -> bool:
    env = dict(os.environ, PATCH_SEED=str(seed), PYTHONHASHSEED="0")
    command = [sys.executable, "-m", "pytest", nodeid, "-q", "--no-header",
               "-p", "no:cacheprovider"]
    return subprocess.run(command, env=env, capture_output=True).returncode == 0


def measured(nodeid: str, runs: int) -> dict:
    fails = sum(not run_passes(nodeid, SEED_BASE + i) for i in range(runs))
    return {"nodeid": nodeid, "n": runs, "fails": fails,
            "upper95": round(wilson_upper(fails, runs), 4), "seed_base": SEED_BASE}


def gate(rows: list[dict], ledger: dict, today: str) -> int:
    code = 0
    for row in rows:
        node, entry = row["nodeid"], ledger.get(row["nodeid"])
        if entry is not None and entry["expires"] < today:
            print(f"FAIL {node}: quarantine expired on {entry['expires']}")
            code = 1
        elif row["upper95"] <= MAX_UPPER_RATE and row["n"] >= MIN_RUNS:
            print(f"OK   {node}: upper95={row['upper95']} over {row['n']} runs")
        elif entry is None:
            print(f"FAIL {node}: upper95={row['upper95']} > {MAX_UPPER_RATE}, "
                  f"no quarantine entry")
            code = 1
        else:
            print(f"WARN {node}: quarantined until {entry['expires']} (owner {entry['owner']})")
    return code


def main() -> int:
    with open("flake_targets.txt") as handle:
        targets = [line.strip() for line in handle if line.strip()]
    runs = int(os.environ.get("FLAKE_RUNS", MIN_RUNS))
    rows = [measured(target, runs) for target in targets]
    with open("flake-report.json", "w") as out:
        json.dump(rows, out, indent=2)
    try:
        with open("flake_ledger.json") as handle:
            ledger = json.load(handle)
    except FileNotFoundError:
        ledger = {}
    return gate(rows, ledger, os.environ["TODAY"])


if __name__ == "__main__":
    sys.exit(main())
