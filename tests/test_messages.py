"""The sentences that explain a refused value: one for every problem the rules can name."""

from datetime import date

import pytest

from flakeboard.rules import ExpiryProblem, Problem
from ledger import messages

TODAY = date(2026, 3, 15)


@pytest.mark.parametrize("problem", list(Problem))
def test_every_problem_reads_as_a_sentence(problem):
    for sentence in (
        messages.nodeid_message(problem, "x" * 1001),
        messages.owner_message(problem),
        messages.evidence_message(problem),
    ):
        assert sentence[0].isupper() and sentence.endswith(".")
        assert "expected form" not in sentence or problem is Problem.BAD_FORMAT


def test_a_long_node_id_says_the_limit_and_its_length():
    assert messages.nodeid_message(Problem.TOO_LONG, "x" * 1001) == (
        "The node id must be at most 1000 characters long (got 1001)."
    )


def test_an_expiry_message_names_the_bound():
    assert "2026-03-15" in messages.expiry_message(ExpiryProblem.NOT_AFTER_TODAY, TODAY, 30)
    assert "2026-04-14" in messages.expiry_message(ExpiryProblem.TOO_FAR, TODAY, 30)
