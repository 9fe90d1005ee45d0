"""Counts in words (flakeboard/rules/text.py): the one plural rule the status summary, the
JUnit answer and the commands' reports share."""

from __future__ import annotations

import pytest

from flakeboard.rules import StatusCause, cause_text, plural

# (count, word, its plural when not word + "s", the words)
PLURALS = [
    (0, "test", None, "0 tests"),
    (1, "test", None, "1 test"),
    (2, "test", None, "2 tests"),
    (1, "entry", "entries", "1 entry"),
    (0, "entry", "entries", "0 entries"),
    (7, "entry", "entries", "7 entries"),
    (1, "open entry is", "open entries are", "1 open entry is"),
    (3, "open entry is", "open entries are", "3 open entries are"),
    (-1, "rerun", None, "-1 reruns"),
]


@pytest.mark.parametrize(("count", "word", "plural_word", "words"), PLURALS)
def test_a_count_in_words(count, word, plural_word, words):
    assert plural(count, word, plural_word) == words


@pytest.mark.parametrize(("count", "words"), [
    (1, "1 expired entry"), (0, "0 expired entries"), (2, "2 expired entries")])
def test_a_status_cause_says_its_count_by_the_same_rule(count, words):
    assert cause_text(StatusCause.EXPIRED, count) == words
