"""Scheduled jobs that run once however many hosts start them: ``notify`` (per suite) and
the prunes (over every suite) are started by cron on every host of a deployment, and the
second run to arrive finds the work taken, says so and exits 0.

On PostgreSQL the lock is a session-level advisory lock (``pg_try_advisory_lock``), keyed
by the job and the suite: it never waits, and a run that dies loses it with its
connection. On SQLite it is a row (``JobLock``) inserted under a unique constraint and
deleted when the run ends; a row older than ``STALE_AFTER`` is a dead run's, and the next
run takes it over.
"""

from __future__ import annotations

import os
import socket
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from .models import JobLock

STALE_AFTER = timedelta(hours=6)


def _key(job: str) -> int:
    """The job's advisory lock class: its name's CRC-32, as a signed 32-bit integer."""
    crc = zlib.crc32(job.encode())
    return crc - 2**32 if crc >= 2**31 else crc


def holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@contextmanager
def job_lock(job: str, suite_id: int = 0) -> Iterator[bool]:
    """Hold the lock of ``job`` for one suite (0: every suite) for the block: yields True
    when this run holds it, False when another run does (then do nothing)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_key(job), suite_id])
            held = cursor.fetchone()[0]
        try:
            yield held
        finally:
            if held:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_key(job), suite_id])
        return
    me = holder()
    held = _take_row(job, suite_id, me)
    try:
        yield held
    finally:
        if held:
            JobLock.objects.filter(job=job, suite_id=suite_id, holder=me).delete()


def _take_row(job: str, suite_id: int, me: str) -> bool:
    now = timezone.now()
    try:
        with transaction.atomic():
            JobLock.objects.create(job=job, suite_id=suite_id, holder=me, taken_at=now)
        return True
    except IntegrityError:
        # Taken: by a live run, or by one that died; a stale row is taken over, by one run.
        return bool(JobLock.objects.filter(job=job, suite_id=suite_id,
                                           taken_at__lt=now - STALE_AFTER)
                    .update(holder=me, taken_at=now))
