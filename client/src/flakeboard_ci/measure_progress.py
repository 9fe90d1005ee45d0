"""measure's progress on stderr: a live line per target in flight on a terminal, else a
line per finished target, and a summary that names the slowest targets."""

from __future__ import annotations

import collections
import shutil
import time

from .ledger import spoken
from .measure_runs import CLASSIFICATIONS
from .stats import upper95


class Progress:
    """Where the runs are, on stderr: on a terminal a live line per target in flight (runs
    done of n, failures, rate, ETA); otherwise a line per finished target. Then a summary
    that names the slowest targets."""

    LIVE_LINES = 20

    def __init__(self, stream):
        self.stream, self.live = stream, stream.isatty()
        self.active = collections.OrderedDict()
        self.drawn, self.drawn_at, self.runs = 0, 0.0, 0
        self.began = time.monotonic()

    def update(self, target):
        self.runs += 1
        if not target.reported:
            self.active[target.name] = target

    def finished(self, target):
        target.reported = True
        self.active.pop(target.name, None)
        self.note(result_line(target))

    def timed_out(self, task, timeout):
        name = task.target.name if task.target is not None else task.node
        self.note(f"TIMEOUT {name}: its run with PATCH_SEED={task.seed} was stopped after "
                  f"{timeout:g}s and counts as a failure")

    def note(self, line):
        self._erase()
        print(line, file=self.stream, flush=True)
        self._draw()

    def tick(self):
        if self.live and time.monotonic() - self.drawn_at > 0.2:
            self._erase()
            self._draw()

    def close(self):
        self._erase()

    def _erase(self):
        if self.drawn:
            self.stream.write(f"\x1b[{self.drawn}F\x1b[J")
            self.drawn = 0

    def _draw(self):
        if not self.live:
            return
        width = shutil.get_terminal_size().columns - 1
        now = time.monotonic()
        lines = [live_line(target, now)[:width] for target in self.active.values()]
        lines = lines[:self.LIVE_LINES]
        for line in lines:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.drawn, self.drawn_at = len(lines), now

    def summary(self, targets, slots):
        wall = time.monotonic() - self.began
        slowest = sorted((t for t in targets if t.outcomes),
                         key=lambda t: t.seconds() / len(t.outcomes), reverse=True)[:3]
        named = ", ".join(f"{t.name} ({1000 * t.seconds() / len(t.outcomes):.0f} ms a run)"
                          for t in slowest)
        counts = collections.Counter(t.classification for t in targets)
        kinds = ", ".join(f"{counts[kind]} {kind}" for kind in CLASSIFICATIONS if counts[kind])
        self.note(f"Measured {len(targets)} target{'s' * (len(targets) != 1)} ({kinds}): "
                  f"{self.runs} runs in {wall:.1f}s ({self.runs / max(wall, 1e-9):.0f} runs/s, "
                  f"{slots} worker{'s' * (slots != 1)}). Slowest: {named or 'none'}.")


def live_line(target, now):
    done = len(target.outcomes)
    fails = sum(outcome.failed for outcome in target.outcomes.values())
    line = (f"  {target.name}: {done}/{target.runs} runs, {fails} failed "
            f"({fails / max(done, 1):.1%})")
    if target.finished:
        return line + ", now checking it after the tests before it in CI's order"
    eta = "?"
    if done and target.started is not None:
        eta = spoken((now - target.started) / done * (target.runs - done))
    return f"{line}, ETA {eta}"


def result_line(target):
    if not target.done:
        return (f"{'not measured':<15} {target.name}: the measure budget ran out before its "
                f"runs started")
    line = (f"{target.classification:<15} {target.name}: {target.fails}/{target.done} failed,"
            f" upper95={upper95(target.fails, target.done):.4f}")
    if target.stopped:
        line += (f", stopped early after {target.done} of {target.runs} runs "
                 f"(over budget with 95% confidence)")
    elif target.cut:
        line += f", cut short by the measure budget after {target.done} of {target.runs} runs"
    return line + (f"; {target.why}" if target.why else "")
