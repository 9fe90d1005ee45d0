"""gunicorn's settings for the board, so that /metrics counts across its worker processes:

    gunicorn -c python:flakeboard.gunicorn flakeboard.wsgi --bind 127.0.0.1:8000 --workers 4

Each worker counts what it serves (uploads, ingest durations, 5xx answers) in a file of
prometheus-client's multiprocess mode, and a scrape, whichever worker answers it, adds up
every worker's files, those of workers that have exited included. The folder is
``PROMETHEUS_MULTIPROC_DIR`` when set (one per server: it is emptied when the server
starts), else a new one under the system's temporary folder, removed when the server stops.
``make run`` serves with these settings; the command line's own options still apply.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from flakeboard.start_up import settings_or_exit

# A setting that cannot work stops the server as its settings are read, before it logs or
# starts a worker (one that fails to boot would print a traceback), saying why in one line.
# The settings import nothing of prometheus_client, which must wait for the variable below.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flakeboard.settings")
settings_or_exit()

# Before prometheus_client is imported, here and in every worker forked from this process:
# the variable decides, at import, where its values are kept.
OWN_FOLDER = "PROMETHEUS_MULTIPROC_DIR" not in os.environ
if OWN_FOLDER:
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="flakeboard-metrics-")

from prometheus_client import multiprocess  # noqa: E402 - after the variable, as it needs

FOLDER = os.environ["PROMETHEUS_MULTIPROC_DIR"]


def on_starting(server):
    """A fresh count per server: the files of an earlier one would add to it."""
    os.makedirs(FOLDER, exist_ok=True)
    for name in os.listdir(FOLDER):
        if name.endswith(".db"):
            os.remove(os.path.join(FOLDER, name))


def child_exit(server, worker):
    """An exited worker's counts stay in the sums; its live gauges are let go."""
    multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    if OWN_FOLDER:
        shutil.rmtree(FOLDER, ignore_errors=True)
