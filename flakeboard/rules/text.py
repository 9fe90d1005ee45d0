"""Counts in words, as every sentence the server writes says them."""

from __future__ import annotations


def plural(n: int, word: str, plural_word: str | None = None) -> str:
    """"1 test", "3 tests"; ``plural_word`` where an added s is wrong ("2 entries"). One
    plural rule for the status summary, the JUnit answer and the commands' reports, so
    that no sentence of the board says "1 tests"."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word + 's' if plural_word is None else plural_word}"
