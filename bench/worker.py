"""One benchmark in a process of its own, on the scratch database DATABASE_URL names.

    python -m bench.worker B1 --scale 1 --backend sqlite --workdir DIR --result FILE

The harness (``python -m bench``) starts it with the environment it needs; the rows go to
FILE as JSON.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import traceback
from pathlib import Path

MODULES = {
    "B1": "bench.b1_ingest",
    "B2": "bench.b2_ledger",
    "B3": "bench.b3_trends",
    "B4": "bench.b4_pages",
    "B5": "bench.b5_upload",
    "B6": "bench.b6_measure",
    "B6b": "bench.b6b_order",
    "B6c": "bench.b6c_new_tests",
    "B6d": "bench.b6d_pr_gate",
    "B6e": "bench.b6e_startup",
    "B7": "bench.b7_junit",
    "B8": "bench.b8_largest",
    "B9": "bench.b9_prune",
    "B10": "bench.b10_company",
    "B11": "bench.b11_diagnosis",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.worker")
    parser.add_argument("bench", choices=sorted(MODULES))
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--backend", required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--result", type=Path, required=True)
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    import django

    django.setup()
    from .measure import load_average

    module = importlib.import_module(MODULES[args.bench])
    before = load_average()
    try:
        rows = module.run(args.scale, args.backend, args.workdir)
    except Exception:
        traceback.print_exc()
        return 1
    for row in rows:
        row.figures["load_average"] = {"before": before, "after": load_average()}
    args.result.write_text(json.dumps([row.as_dict() for row in rows], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
