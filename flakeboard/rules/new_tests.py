"""New tests (SPEC 2.4b, amended by docs/new-tests.md): a node is new at a commit when the
board holds no evidence for it from an earlier commit: no measurement, no signal record,
no JUnit result. Commits are ordered as the board first heard of them, so a node's
evidence is summed up by the commit of its first piece: ``first_commit``, None while there
is none, and "" for evidence older than the board's record of it (a node known before
first commits were kept)."""

from __future__ import annotations

# What a node's first_commit is when its evidence predates the record of first commits.
BEFORE_RECORD = ""


def is_new(first_commit: str | None, commit: str) -> bool:
    """Whether a node whose first evidence came at ``first_commit`` is new at ``commit``:
    it has none, or the first came at this very commit (a rerun of the commit that added
    it is still its birth)."""
    return first_commit is None or first_commit == commit


def first_commit_after(first_commit: str | None, commit: str) -> str:
    """A node's first_commit once evidence at ``commit`` is stored: the first stays."""
    return commit if first_commit is None else first_commit
