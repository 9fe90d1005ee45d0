"""A commit's one canonical form (``rules.commits``): trimmed of blanks, and lower-case when
it is hex, so that one commit in two spellings is one gate (SPEC 2.4a)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard import rules
from tests.properties import PROPERTY


@pytest.mark.parametrize(("given", "canonical"), [
    ("abc123", "abc123"),
    ("ABC123", "abc123"),
    ("  AbC123\n", "abc123"),
    ("0123456789ABCDEFabcdef", "0123456789abcdefabcdef"),
    ("v1.0-RC", "v1.0-RC"),  # not hex: a label, kept as written but trimmed
    ("Main ", "Main"),
    ("", ""),
    ("   ", ""),
])
def test_a_commit_is_trimmed_and_its_hex_lower_cased(given, canonical):
    assert rules.canonical_commit(given) == canonical


@pytest.mark.parametrize("control", ["\x03", "\x1c", "\x1f", "\x85"])
def test_a_control_character_is_not_trimmed_away(control):
    """Only blanks are trimmed: any other control character stays, for the label check to
    refuse."""
    assert rules.canonical_commit(f"abc{control}") == f"abc{control}"


HEX = st.text(alphabet="0123456789abcdefABCDEF", min_size=1, max_size=40)
BLANKS = st.text(alphabet=" \t\n\r", max_size=3)


@PROPERTY
@given(st.text(max_size=60))
def test_the_canonical_form_is_its_own(text):
    once = rules.canonical_commit(text)
    assert rules.canonical_commit(once) == once
    assert once == once.strip(" \t\n\r\v\f")


@PROPERTY
@given(HEX, BLANKS, BLANKS)
def test_every_spelling_of_a_hex_commit_is_one(digits, before, after):
    spelled = before + "".join(c.upper() if i % 2 else c for i, c in enumerate(digits)) + after
    assert rules.canonical_commit(spelled) == digits.lower()
