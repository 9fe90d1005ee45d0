"""A failure's first line and its signature (flakeboard/rules/signatures.py): what changes
from run to run replaced, so that one test's failures group into a few causes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flakeboard.rules.signatures import (
    MESSAGE_MAX_LENGTH,
    SIGNATURE_MAX_LENGTH,
    first_line,
    signature,
)
from tests.properties import PROPERTY

# (message, its signature): the messages are the real ones of tests/corpus/junit/.
SIGNATURES = [
    ("assert 6 == 7", "assert <n> == <n>"),
    ('failed on setup with "ConnectionError: could not connect to 10.0.3.17:5432 after 3 '
     'tries"',
     'failed on setup with "ConnectionError: could not connect to <n>:<n> after <n> tries"'),
    ("expected: <1> but was: <0>", "expected: <<n>> but was: <<n>>"),
    ("Error: expect(received).toBe(expected) // Object.is equality",
     "Error: expect(received).toBe(expected) // Object.is equality"),
    ("fails_test.go:34: this failed", "fails_test.go:<n>: this failed"),
    # hexadecimal: addresses, object ids, digests
    ("lock at 0x7f3a00000001 held by worker 17", "lock at <hex> held by worker <n>"),
    ("<Session object at 0x10a2b3c4d>", "<Session object at <hex>>"),
    ("blob deadbeef1234 is missing", "blob <hex> is missing"),
    ("deadbeef is a word here", "deadbeef is a word here"),  # no digit: not a number
    # temporary paths
    ("FileNotFoundError: /tmp/pytest-of-ci/pytest-12/test_x0/out.json",
     "FileNotFoundError: <tmp>"),
    ("cannot open /var/folders/q2/x8_9lk/T/tmpab12cd/db.sqlite3: locked",
     "cannot open <tmp>: locked"),
    ("cannot open /private/var/folders/q2/T/x.log", "cannot open <tmp>"),
    (r"C:\Users\ci\AppData\Local\Temp\pytest-1\x.txt missing", "<tmp> missing"),
    # timestamps, dates, UUIDs
    ("at 2023-06-23 17:27:31,351 INFO started", "at <time> INFO started"),
    ("expired 2026-03-15T09:12:44.123Z", "expired <time>"),
    ("due 2026-03-15, got 2026-03-16", "due <date>, got <date>"),
    ("timed out at 17:27:31", "timed out at <time>"),
    ("order 123e4567-e89b-12d3-a456-426614174000 not found", "order <uuid> not found"),
    # numbers with their decimals; white space folded
    ("Expected: 0.3   Received: 0.30000000000000004", "Expected: <n> Received: <n>"),
    ("took 1,234.5 ms", "took <n> ms"),
    ("", ""),
]


@pytest.mark.parametrize(("message", "expected"), SIGNATURES)
def test_each_message_has_its_signature(message, expected):
    assert signature(message) == expected


def test_a_signature_is_cut_to_its_limit():
    assert len(signature("x" * 1000)) == SIGNATURE_MAX_LENGTH
    assert signature("a " * 200).endswith("a")  # never a space at the cut


FIRST_LINES = [
    ("assert 6 == 7\n +  where 6 = sum([1, 2, 3])", "assert 6 == 7"),
    ("\n\n   Error: boom  \nat x", "Error: boom"),
    ("  \n\t\n", ""),
    (None, ""),
    ("y" * 600, "y" * MESSAGE_MAX_LENGTH),
]


@pytest.mark.parametrize(("text", "expected"), FIRST_LINES)
def test_a_message_is_its_first_line_with_text(text, expected):
    assert first_line(text) == expected


WORDS = st.text(alphabet="ghijklmnopqrstuvwxyz:=()'\"", min_size=1, max_size=12)
# What may change from run to run, each kind its own strategy.
CHANGING = [
    st.integers(min_value=0, max_value=10**12).map(str),
    st.floats(min_value=0, max_value=1e9, allow_nan=False).map(lambda x: f"{x:.3f}"),
    st.integers(min_value=0, max_value=2**64).map(hex),
    st.uuids().map(str),
    st.integers(min_value=0, max_value=10**6).map(lambda n: f"/tmp/pytest-of-ci/pytest-{n}/x"),
    st.datetimes().map(lambda moment: moment.isoformat(sep=" ", timespec="seconds")),
]
SLOTS = st.one_of(WORDS, st.integers(min_value=0, max_value=len(CHANGING) - 1))


@PROPERTY
@given(template=st.lists(SLOTS, min_size=1, max_size=12), data=st.data())
def test_messages_that_differ_only_in_numbers_share_a_signature(template, data):
    """Two messages made of the same words, with another number, address, UUID, temporary
    path or timestamp of the same kind where they hold one, are one failure cause."""

    def message():
        return " ".join(
            slot if isinstance(slot, str) else data.draw(CHANGING[slot]) for slot in template)

    assert signature(message()) == signature(message())


@PROPERTY
@given(st.text(max_size=300))
def test_a_signature_is_its_own_signature_and_never_longer(message):
    once = signature(message)
    assert signature(once) == once
    assert len(once) <= SIGNATURE_MAX_LENGTH
    assert not any(c.isdigit() and c.isascii() for c in once)
