"""Each diagnosis category in words (SPEC 2.4d): a short name for a column, a select or a
badge, and what it means for the test's owner, with what to do. Every page that shows a
diagnosis (the node page, the flaky-tests page, the trends, a report's rows) says it so."""

from __future__ import annotations

from dataclasses import dataclass

from .diagnosis import Category


@dataclass(frozen=True)
class CategoryWords:
    label: str  # a short name, for a column or a select
    meaning: str  # what it means and what to do, one sentence


CATEGORY_WORDS = {
    Category.ORDER_DEPENDENT: CategoryWords(
        "Order-dependent", "It fails after (or without) another test: make it set up and "
                           "clean up the state it relies on."),
    Category.SEEDED: CategoryWords(
        "Random input", "It fails on its random input: replay the seed and fix the test's "
                        "assumption."),
    Category.TIMING: CategoryWords(
        "Timing", "It fails more often under CPU load: it waits on time, not on a condition; "
                  "wait for the condition instead."),
    Category.REPEAT_UNSAFE: CategoryWords(
        "Leaks into its next run", "Its own earlier run changes its outcome: it leaves state "
                                    "behind; reset that state in the test."),
    Category.JOB_SPECIFIC: CategoryWords(
        "One CI job", "Its flaky failures concentrate in one job of CI's matrix: compare that "
                      "job's versions and environment with the others'."),
    Category.CI_ONLY: CategoryWords(
        "CI only", "It flakes in CI but not when measured: look at CI's conditions (load, "
                   "parallel workers, the network) and reproduce them."),
    Category.EXTERNAL: CategoryWords(
        "Network or service", "Its failures name the network or a service: give the test a "
                              "fake of that service."),
    Category.UNKNOWN: CategoryWords(
        "Unknown", "No experiment or statistic explains it yet: see what was tried, and "
                   "measure it with the diagnosis on."),
}
