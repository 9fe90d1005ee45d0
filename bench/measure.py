"""Timing and the result rows every benchmark returns."""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

MET, MISSED, UNAVAILABLE, ERROR = "met", "missed", "not available yet", "error"
# A row the run refuses to report: what it would measure would be the harness, not the board.
NOT_REPORTED = "not reported"
TIMES = "\N{MULTIPLICATION SIGN}"


@dataclass
class Row:
    """One measured figure and its goal.

    ``ratio`` is subject ÷ baseline when there is a baseline, else figure ÷ limit; the goal
    is met when ``ratio`` is on the right side of ``limit`` (``at_most`` or at least).
    """

    id: str
    backend: str
    what: str
    subject: str = ""
    baseline: str = ""
    goal: str = ""
    ratio: float | None = None
    limit: float | None = None
    at_most: bool = True
    status: str = ""
    detail: str = ""
    figures: dict = field(default_factory=dict)

    def judge(self, *also: bool) -> Row:
        """Mark the row met or missed from its ratio (and any further conditions)."""
        ok = self.ratio <= self.limit if self.at_most else self.ratio >= self.limit
        self.status = MET if ok and all(also) else MISSED
        return self

    def as_dict(self) -> dict:
        return asdict(self)


def unavailable(bench_id: str, backend: str, what: str, missing: str) -> Row:
    return Row(bench_id, backend, what, status=UNAVAILABLE, detail=f"{missing} does not exist")


def median(values: list[float]) -> float:
    return statistics.median(values)


def clock(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


@dataclass
class Timings:
    """Seconds per run, wall clock and this process's CPU, keyed by subject name."""

    wall: dict[str, list[float]]
    cpu: dict[str, list[float]]

    def median(self, name: str) -> float:
        return median(self.wall[name])

    def cpu_median(self, name: str) -> float:
        return median(self.cpu[name])

    def cpu_text(self) -> str:
        """Each subject's median CPU time: ``subject 1.20 s, baseline 80.0 ms``."""
        return ", ".join(f"{name} {fmt_seconds(self.cpu_median(name))}" for name in self.cpu)

    def figures(self) -> dict[str, list[float]]:
        """Every run's seconds for a row's figures: ``<name>_s``, then ``<name>_cpu_s``."""
        return {**{f"{name}_s": runs for name, runs in self.wall.items()},
                **{f"{name}_cpu_s": runs for name, runs in self.cpu.items()}}


def interleaved(subjects: dict[str, Callable[[int], object]], repeats: int) -> Timings:
    """Run each callable once per round, in rotating order, and time every run.

    Each callable gets the round number, so it can use fresh input every time.
    """
    names = list(subjects)
    timings = Timings({name: [] for name in names}, {name: [] for name in names})
    for rnd in range(repeats):
        shift = rnd % len(names)
        for name in names[shift:] + names[:shift]:
            cpu = time.process_time()
            seconds, _ = clock(lambda name=name, rnd=rnd: subjects[name](rnd))
            timings.wall[name].append(seconds)
            timings.cpu[name].append(time.process_time() - cpu)
    return timings


def fmt_seconds(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1000:.1f} ms"


_STARTED = time.monotonic()


def progress(message: str) -> None:
    print(f"  {time.monotonic() - _STARTED:6.1f} s  {message}", file=sys.stderr, flush=True)


def proc_status_bytes(pid: int | str, key: str) -> int | None:
    """A ``kB`` line of /proc/<pid>/status (e.g. VmRSS, VmHWM) in bytes; None if unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def peak_rss() -> int:
    """This process's peak resident set so far, in bytes: a high-water mark, so measure a
    subject by the increase over ``reset_peak_rss()`` taken just before it."""
    peak = proc_status_bytes("self", "VmHWM")
    if peak is None:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return peak


def reset_peak_rss() -> int:
    """Start this process's peak again from its resident set now (Linux: clear_refs), so
    that what came before (making the data) does not hide the subject's own peak; returns
    the new starting figure (the old peak where it cannot be reset)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
    return peak_rss()


def fmt_bytes(size: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if abs(size) < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.2f} GiB"


def load_average() -> float | None:
    """The 1-minute load average: other work on the machine slows every wall-clock figure."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def repeats(scale: float, full: int, least: int = 2) -> int:
    """``full`` repetitions at scale 1 and above, fewer (never under ``least``) below."""
    if scale >= 1:
        return full
    return max(least, round(full * scale**0.5))


def scaled(scale: float, full: int, least: int = 1) -> int:
    return max(least, round(full * scale))


def routable(path: str) -> bool:
    """Whether the project serves ``path`` yet (some features land after the harness)."""
    from django.urls import Resolver404, resolve

    try:
        resolve(path)
    except Resolver404:
        return False
    return True
