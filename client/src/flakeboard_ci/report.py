"""The report and signals commands: upload a file, print what the board decided."""

from __future__ import annotations

from .board import _upload
from .outputs import present


def cmd_report(board, args):
    answer = _upload(board, args, "reports", commit=args.commit, branch=args.branch)
    return present(answer, "report", args)


def cmd_signals(board, args):
    answer = _upload(board, args, "verdicts", patch=args.patch, commit=args.commit)
    return present(answer, "signals", args)
