"""Every failure of a patch's gate explained to its author: the one line under each failed
node, from the evidence the board holds of it. In this order:

- **quarantined**: a live ledger entry covers it (its owner and expiry);
- **known flaky**: flaky evidence (its rate and bound, since when, and its diagnosis where
  one exists), unless the gate's own measurement found it ``broken``: a node that fails
  every run is not failing by chance, whatever its past;
- **also failing on the default branch**: its last JUnit results there failed (when);
- **new failure**: none of those, so it is probably caused by this change (it passes on the
  default branch, or the board holds no result of it there, which the line says).

The gate's measurement, where there is one, is said on the line: it confirms or corrects
the label. The CI client's build takes this module as it is (client/build.py's
SHARED_RULES): keep it standard library only and Python 3.8."""

from __future__ import annotations

import typing

FAILURE_LABELS = ("quarantined", "known_flaky", "failing_on_default", "new_failure")
# How many of the default branch's last failures the line names.
DEFAULT_FAILURES_SHOWN = 3


class FailureEvidence(typing.NamedTuple):
    """What the board holds of a failed node. ``entry``: its live ledger entry (owner,
    expires), or None. ``flaky``: its flaky evidence (rate, upper95, since, diagnosis), or
    None. ``default_failures``: the commits (or days) of its last failed JUnit results on
    the default branch, newest first; ``passed_on_default``: whether its last result there
    passed (None: no result there). ``measured``: the classification of the gate's own
    measurement of it (``broken``, ``flaky``, ``stable``), or None."""

    entry: tuple[str, str] | None = None
    flaky: tuple[float, float, str, str] | None = None
    default_failures: tuple[str, ...] = ()
    passed_on_default: bool | None = None
    measured: str | None = None


class FailureLabel(typing.NamedTuple):
    label: str
    line: str


def failure_label(evidence: FailureEvidence) -> FailureLabel:
    """The label of a failed node and the line that explains it."""
    measured = f"; measured {evidence.measured} here" if evidence.measured else ""
    if evidence.entry is not None:
        owner, expires = evidence.entry
        return FailureLabel("quarantined",
                            f"quarantined: until {expires} by {owner}{measured}")
    if evidence.flaky is not None and evidence.measured != "broken":
        rate, upper, since, diagnosis = evidence.flaky
        why = f", {diagnosis}" if diagnosis else ""
        return FailureLabel("known_flaky",
                            f"known flaky: rate {rate:.1%} (≤ {upper:.1%} at 95%) since "
                            f"{since}{why}{measured}")
    if evidence.default_failures and not evidence.passed_on_default:
        shown = ", ".join(evidence.default_failures[:DEFAULT_FAILURES_SHOWN])
        more = len(evidence.default_failures) - DEFAULT_FAILURES_SHOWN
        return FailureLabel("failing_on_default",
                            f"also failing on the default branch: last failed at {shown}"
                            f"{f' and {more} more' if more > 0 else ''}{measured}")
    where = ("it passes on the default branch" if evidence.passed_on_default
             else "no result of it on the default branch")
    if evidence.flaky is None:
        why = f"{where} and no flaky evidence"
    else:  # measured broken: its flaky past does not explain it
        why = f"{where}; its flaky past does not explain failing every run"
    return FailureLabel("new_failure",
                        f"new failure: {why}, so probably caused by this change{measured}")
