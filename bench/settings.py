"""Settings for the benchmark processes: the project's settings, plus a static root and an
optional second database read from the environment.

BENCH_STATIC_ROOT  where WhiteNoise finds the static copy of the served ledger (B2).
BENCH_SECOND_DATABASE_URL  a second scratch database, selected with ``bench.routing.use``.
"""

import os
from pathlib import Path

import dj_database_url

from flakeboard.settings import *  # noqa: F403
from flakeboard.settings import DATABASES

if root := os.environ.get("BENCH_STATIC_ROOT"):
    STATIC_ROOT = Path(root)

if url := os.environ.get("BENCH_SECOND_DATABASE_URL"):
    second = dj_database_url.parse(url)
    for key in ("CONN_MAX_AGE", "OPTIONS"):
        if key in DATABASES["default"]:
            second[key] = DATABASES["default"][key]
    DATABASES["second"] = second
    DATABASE_ROUTERS = ["bench.routing.SelectedDatabase"]
