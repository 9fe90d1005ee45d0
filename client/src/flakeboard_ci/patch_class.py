"""gate --diff: the patch's class, from the added lines of its changed source files that
touch concurrency or time. A riskier class only asks for more repeat-budget evidence
(gate --measure runs 1, 2 or 4 times the suite's min_runs), never less."""

from __future__ import annotations

import collections
import re
import subprocess

from .core import UsageError

# The files whose added lines count: source code. Test files count too: a sleep, a timeout
# or a thread added to a test is the commonest way a test becomes flaky, and a test is
# exactly what the repeat budget measures.
SOURCE_SUFFIXES = (
    ".py", ".pyi", ".pyx", ".pxd",  # Python, Cython
    ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".rs", ".go",  # extensions and services
    ".java", ".kt", ".js", ".mjs", ".ts", ".rb",
)

# What touches concurrency or time: each a name and a regular expression, matched without
# regard to case against an added line. A line counts once, however many match; each
# pattern it matches is counted in the breakdown. The lock pattern wants the word (lock,
# RLock, _lock, locked), so that block and clock are not locks.
RISKY_PATTERNS = (
    ("async", r"\basync\b"),
    ("await", r"\bawait\b"),
    ("asyncio", r"\b(?:asyncio|anyio|trio|gevent|eventlet)\b"),
    ("thread", r"thread"),
    ("lock", r"(?:\b|_)(?:r|dead)?lock(?:s|ed|ing)?(?:\b|_)"),
    ("semaphore", r"semaphore|barrier"),
    ("concurrent", r"concurren"),
    ("multiprocessing", r"multiprocessing|\bfork\b"),
    ("time.", r"\btime\."),
    ("sleep", r"sleep"),
    ("datetime.now", r"\b(?:datetime|date|timezone)\.(?:now|today|utcnow)\b"),
    ("random", r"random"),
    ("retry", r"retr(?:y|ies|ied|ying)"),
    ("timeout", r"time_?out"),
)
_RISKY = [(name, re.compile(pattern, re.IGNORECASE)) for name, pattern in RISKY_PATTERNS]

# The classes by risky lines: low has none, medium 1 to MEDIUM_MAX_LINES, high more.
MEDIUM_MAX_LINES = 5
# gate --measure's runs per tier-2 node: the suite's min_runs times the class's factor.
CLASS_RUNS_FACTOR = {"low": 1, "medium": 2, "high": 4}


class PatchRisk:
    """What a diff's added source lines hold: how many touch concurrency or time, which
    patterns they matched, in which files, and so the patch's class."""

    def __init__(self, lines, patterns, files, changed=()):
        self.lines = lines
        self.patterns = patterns  # pattern name -> lines it matched
        self.files = files  # path -> risky lines added to it
        # Every path the diff changed and kept, risky or not: gate --measure measures the
        # selected tests of the changed test files (docs/ci-client.md).
        self.changed = tuple(changed)

    @property
    def patch_class(self):
        if self.lines == 0:
            return "low"
        return "medium" if self.lines <= MEDIUM_MAX_LINES else "high"

    def summary(self):
        named = ", ".join(f"{name} {count}" for name, count in self.patterns.most_common())
        where = ", ".join(sorted(self.files))
        line = (f"PATCH CLASS {self.patch_class}: {self.lines} added source "
                f"line{'s' * (self.lines != 1)} touching concurrency or time")
        return line + (f" ({named}) in {where}" if self.lines else "")


def is_source(path):
    return path is not None and path.lower().endswith(SOURCE_SUFFIXES)


def _new_path(header):
    """The path of a '+++ ' line: None for a deleted file."""
    path = header[4:].rstrip("\n")
    if path.startswith('"') and path.endswith('"'):
        path = path[1:-1]  # git quotes a path with unusual characters
    if path == "/dev/null":
        return None
    return path[2:] if path.startswith("b/") else path


def classify_diff(text):
    """The PatchRisk of a unified diff (as `git diff` writes it): only the added lines of
    hunks of source files count, never the file headers; every file the diff changed and
    kept is named in its ``changed``."""
    lines, patterns, files = 0, collections.Counter(), collections.Counter()
    changed = {}
    path, in_hunk = None, False
    for line in text.splitlines():
        if line.startswith("diff --git "):
            path, in_hunk = None, False
        elif not in_hunk and line.startswith("+++ "):
            path = _new_path(line)
            if path is not None:
                changed[path] = True
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+") and is_source(path):
            matched = [name for name, pattern in _RISKY if pattern.search(line, 1)]
            if matched:
                lines += 1
                patterns.update(matched)
                files[path] += 1
    return PatchRisk(lines, patterns, files, changed)


def git_diff(revisions):
    """`git diff --unified=0 REVISIONS`' text; UsageError when git cannot give it."""
    command = ["git", "diff", "--unified=0", "--no-color", "--no-ext-diff",
               "--src-prefix=a/", "--dst-prefix=b/", revisions, "--"]
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True,
                              check=False)
    except OSError as exc:
        raise UsageError(f"--diff needs git, which cannot be run: {exc}") from None
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"git diff {revisions} failed (exit code {done.returncode}): "
                         f"{why[0] if why else 'no message'}")
    return done.stdout.decode("utf-8", "replace")
